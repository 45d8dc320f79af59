// The scorers' tables (metric_tables.h): the flat map's memory, n-gram ids of
// a sentence, and CIDEr-D document frequencies, vectors and scores.
#include "metrics/metric_tables.h"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <new>
#include <utility>

namespace expnet::metrics_detail {

FlatU64Map::Slot* FlatU64Map::allocate(size_t capacity) {
  const size_t bytes = capacity * sizeof(Slot);
  constexpr size_t kHugePage = size_t{2} << 20;
  void* memory = nullptr;
  if (bytes >= kHugePage) {
    memory = std::aligned_alloc(kHugePage, (bytes + kHugePage - 1) / kHugePage * kHugePage);
#ifdef MADV_HUGEPAGE
    if (memory) madvise(memory, bytes, MADV_HUGEPAGE);  // a hint: failure only costs speed
#endif
  } else {
    memory = std::malloc(bytes);
  }
  if (!memory) throw std::bad_alloc();
  auto* slots = static_cast<Slot*>(memory);
  for (size_t i = 0; i < capacity; ++i) slots[i] = {kEmpty, 0};
  return slots;
}

void FlatU64Map::release(Slot* slots, size_t) { std::free(slots); }

void sentence_ngrams(NgramIndex* insert_into, const NgramIndex& index, const uint32_t* words, size_t size,
                     NgramScratch& s) {
  s.packed.clear();
  s.previous.resize(size);
  s.current.resize(size);
  s.keys.resize(size);
  uint32_t next_local = 0;
  for (size_t n = 0; n < static_cast<size_t>(kMaxN) && n < size; ++n) {
    const size_t count = size - n;
    s.unseen.clear();
    // Keys first, all prefetched, so the table's cache misses overlap.
    for (size_t i = 0; i < count; ++i) {
      const uint32_t prefix = n == 0 ? kNone : s.previous[i];
      const uint32_t word = words[i + n];
      const bool unseen_part = (n > 0 && (prefix & kLocalBit)) || (word & kLocalBit);
      s.keys[i] = NgramIndex::key(prefix, word);
      s.current[i] = unseen_part ? kNone : 0;
      if (!unseen_part) index.prefetch(s.keys[i]);
    }
    for (size_t i = 0; i < count; ++i) {
      uint32_t id = kNone;
      if (insert_into)
        id = insert_into->insert_key(s.keys[i]);
      else if (s.current[i] == 0)
        id = index.find_key(s.keys[i]);
      if (id == kNone) s.unseen.emplace_back(s.keys[i], static_cast<uint32_t>(i));
      s.current[i] = id;
    }
    if (!s.unseen.empty()) {
      std::sort(s.unseen.begin(), s.unseen.end());
      uint64_t last_key = ~uint64_t{0};
      for (const auto& [key, position] : s.unseen) {
        if (key != last_key) ++next_local;
        last_key = key;
        s.current[position] = kLocalBit | next_local;
      }
    }
    for (size_t i = 0; i < count; ++i) s.packed.push_back((uint64_t{s.current[i]} << 2) | n);
    std::swap(s.previous, s.current);
  }
}

namespace {
constexpr double kSigma = 6.0;
constexpr double kPythonE = 2.718281828459045;  // np.e: the penalty is np.e ** x, not exp(x)
double gaussian_penalty(double delta) { return std::pow(kPythonE, -(delta * delta) / (2 * kSigma * kSigma)); }

double penalty(double delta) {
  static const std::vector<double> table = [] {
    std::vector<double> values(256);
    for (size_t d = 0; d < values.size(); ++d) values[d] = gaussian_penalty(static_cast<double>(d));
    return values;
  }();
  const double magnitude = std::fabs(delta);
  return magnitude < static_cast<double>(table.size()) ? table[static_cast<size_t>(magnitude)]
                                                       : gaussian_penalty(delta);
}
}  // namespace

CiderDModel::CiderDModel() = default;

void CiderDModel::add_image_references(const std::vector<std::pair<const uint32_t*, size_t>>& references) {
  const uint32_t stamp = static_cast<uint32_t>(images_ + 1);
  for (const auto& [words, size] : references) {
    sentence_ngrams(&index_, index_, words, size, build_scratch_);
    if (document_frequency_.size() < index_.size()) {
      document_frequency_.resize(std::max<size_t>(index_.size(), document_frequency_.size() * 2), 0);
      last_image_.resize(document_frequency_.size(), 0);
    }
    for (const uint64_t packed : build_scratch_.packed) {
      const auto id = static_cast<uint32_t>(packed >> 2);
      if (last_image_[id] == stamp) continue;  // df counts images, not sentences
      last_image_[id] = stamp;
      ++document_frequency_[id];
    }
  }
  ++images_;
}

void CiderDModel::finish() {
  log_images_ = std::log(static_cast<double>(images_));
  idf_.resize(index_.size());
  for (size_t id = 0; id < idf_.size(); ++id)
    idf_[id] = log_images_ - std::log(std::max(1.0, static_cast<double>(document_frequency_[id])));
  document_frequency_ = {};
  last_image_ = {};
  build_scratch_ = {};
}

CiderVector make_cider_vector(std::vector<uint64_t>& packed, const std::vector<double>& idf, double log_images,
                              std::vector<CiderEntry>& arena, size_t sentence_length) {
  std::sort(packed.begin(), packed.end());
  return cider_vector_of_sorted(
      packed.size(), [&](size_t i) { return packed[i]; },
      [&](size_t i) {
        // Unseen n-grams have df 0, which pycocoevalcap clamps to 1: idf = log N.
        const auto id = static_cast<size_t>(packed[i] >> 2);
        return id < idf.size() ? idf[id] : log_images;
      },
      arena, sentence_length);
}

double cider_d_score(const CiderVector& candidate, const std::vector<CiderEntry>& candidate_arena,
                     const std::vector<CiderVector>& references, const std::vector<CiderEntry>& reference_arena) {
  if (references.empty()) return 0.0;
  double sums[kMaxN] = {0, 0, 0, 0};
  const CiderEntry* c_end = candidate_arena.data() + candidate.end;
  for (const CiderVector& reference : references) {
    double values[kMaxN] = {0, 0, 0, 0};
    const CiderEntry* c = candidate_arena.data() + candidate.begin;
    const CiderEntry* r = reference_arena.data() + reference.begin;
    const CiderEntry* r_end = reference_arena.data() + reference.end;
    while (c != c_end && r != r_end) {
      if (c->id < r->id) {
        ++c;
      } else if (r->id < c->id) {
        ++r;
      } else {
        values[c->order] += std::min(c->weight, r->weight) * r->weight;  // clipped (CIDEr-D)
        ++c;
        ++r;
      }
    }
    const double length_penalty = penalty(candidate.length - reference.length);
    for (int n = 0; n < kMaxN; ++n) {
      if (candidate.norm[n] != 0 && reference.norm[n] != 0) values[n] /= candidate.norm[n] * reference.norm[n];
      sums[n] += values[n] * length_penalty;
    }
  }
  const double mean_over_n = (((sums[0] + sums[1]) + sums[2]) + sums[3]) / kMaxN;
  return mean_over_n / static_cast<double>(references.size()) * 10.0;
}

}  // namespace expnet::metrics_detail
