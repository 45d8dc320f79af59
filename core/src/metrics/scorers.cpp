// BLEU, ROUGE-L and CIDEr-D computed the way pycocoevalcap computes them (see
// docs/metrics.md), on word ids instead of strings.
#include <algorithm>
#include <cmath>
#include <array>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <thread>
#include <utility>

#include "expnet/metrics/eval_tokenizer.h"
#include "expnet/metrics/scorers.h"
#include "expnet/system/system.h"
#include "metrics/metric_tables.h"

namespace expnet {

using metrics_detail::CiderDModel;
using metrics_detail::CiderEntry;
using metrics_detail::CiderVector;
using metrics_detail::kLocalBit;
using metrics_detail::kMaxN;
using metrics_detail::kNone;
using metrics_detail::NgramIndex;
using metrics_detail::NgramScratch;

namespace {

// Splits images [0, count) in one range per core (one range under 256 images) and runs
// `run(first, last, range)` on each, the first on this thread; an exception in any
// range is rethrown here once all have ended. Returns the number of ranges.
constexpr size_t kMaxRanges = 16;

template <typename Run>
size_t for_image_ranges(size_t count, Run&& run) {
  const size_t ranges = count < 256 ? 1 : static_cast<size_t>(std::clamp(hardware_threads(), 1, int{kMaxRanges}));
  std::vector<std::exception_ptr> failures(ranges);
  const auto guarded = [&](size_t r) {
    try {
      run(count * r / ranges, count * (r + 1) / ranges, r);
    } catch (...) {
      failures[r] = std::current_exception();
    }
  };
  std::vector<std::thread> helpers;
  for (size_t r = 1; r < ranges; ++r) helpers.emplace_back(guarded, r);
  guarded(0);
  for (auto& helper : helpers) helper.join();
  for (const auto& failure : failures)
    if (failure) std::rethrow_exception(failure);
  return ranges;
}

}  // namespace

struct EvalSet::Words {
  metrics_detail::WordTable table;
};

EvalSet::EvalSet() : words_(std::make_unique<Words>()), sentence_offsets_{0} {}
EvalSet::~EvalSet() = default;
EvalSet::EvalSet(EvalSet&&) noexcept = default;
EvalSet& EvalSet::operator=(EvalSet&&) noexcept = default;

uint32_t EvalSet::add_sentence(const std::vector<std::string>& words) {
  for (const auto& word : words)
    if (!word.empty()) word_ids_.push_back(words_->table.intern(word));
  sentence_offsets_.push_back(word_ids_.size());
  return static_cast<uint32_t>(sentence_offsets_.size() - 2);
}

namespace {

void check_has_references(const std::string& image_id, size_t references) {
  if (references == 0)
    throw std::invalid_argument("image '" + image_id + "' has no reference captions (every image needs at least one)");
}

// `reference` -1 is the candidate.
void check_caption_size(const std::string& image_id, size_t size, long reference, const char* unit, size_t limit) {
  if (size <= limit) return;
  throw CaptionTooLong("image '" + image_id + "': " +
                           (reference < 0 ? std::string("the candidate caption") : "reference " + std::to_string(reference + 1)) +
                           " has " + std::to_string(size) + " " + unit + ", more than the limit of " + std::to_string(limit) +
                           " per caption (ROUGE-L's time grows with the product of two captions' lengths): "
                           "shorten it, or check that this field holds a caption",
                       reference);
}

}  // namespace

void EvalSet::add(std::string image_id, const std::vector<std::string>& candidate,
                  const std::vector<std::vector<std::string>>& references) {
  check_has_references(image_id, references.size());
  check_caption_size(image_id, candidate.size(), -1, "words", kMaxCaptionWords);
  for (size_t r = 0; r < references.size(); ++r)
    check_caption_size(image_id, references[r].size(), static_cast<long>(r), "words", kMaxCaptionWords);
  Image image;
  image.id = std::move(image_id);
  image.first_sentence = add_sentence(candidate);
  for (const auto& reference : references) add_sentence(reference);
  image.reference_count = references.size();
  images_.push_back(std::move(image));
}

void EvalSet::add_raw(std::string image_id, std::string_view candidate, const std::vector<std::string>& references) {
  check_caption_size(image_id, candidate.size(), -1, "bytes", kMaxCaptionBytes);
  for (size_t r = 0; r < references.size(); ++r)
    check_caption_size(image_id, references[r].size(), static_cast<long>(r), "bytes", kMaxCaptionBytes);
  std::vector<std::vector<std::string>> tokenized;
  tokenized.reserve(references.size());
  for (const auto& reference : references) tokenized.push_back(tokenize_for_eval(reference));
  add(std::move(image_id), tokenize_for_eval(candidate), tokenized);
}

void EvalSet::add_raw_all(const std::vector<RawImage>& images) {
  for (const RawImage& image : images) {
    check_caption_size(image.id, image.candidate.size(), -1, "bytes", kMaxCaptionBytes);
    for (size_t r = 0; r < image.references->size(); ++r)
      check_caption_size(image.id, (*image.references)[r].size(), static_cast<long>(r), "bytes", kMaxCaptionBytes);
  }
  // Each range of images is tokenized by one thread straight into word ids of its
  // own table; the tables then join the set's in range order, so every word keeps
  // the id of its first appearance in image order, as adding one by one gives it.
  struct RangeWords {
    metrics_detail::WordTable table;
    std::vector<uint32_t> ids;            // local ids, the range's sentences back to back
    std::vector<size_t> sentence_ends;    // candidate, then references, image by image
    size_t first = 0, last = 0;           // its images
  };
  std::vector<RangeWords> ranges(kMaxRanges);
  const size_t used = for_image_ranges(images.size(), [&](size_t first, size_t last, size_t r) {
    RangeWords& words = ranges[r];
    words.first = first;
    words.last = last;
    const auto token = [&](std::string_view word) { words.ids.push_back(words.table.intern(word)); };
    for (size_t i = first; i < last; ++i) {
      for_each_eval_token(images[i].candidate, token);
      words.sentence_ends.push_back(words.ids.size());
      for (const auto& reference : *images[i].references) {
        for_each_eval_token(reference, token);
        words.sentence_ends.push_back(words.ids.size());
      }
    }
  });
  std::vector<uint32_t> to_set;
  for (size_t r = 0; r < used; ++r) {
    const RangeWords& words = ranges[r];
    to_set.resize(words.table.size());
    for (uint32_t id = 0; id < words.table.size(); ++id) to_set[id] = words_->table.intern(words.table.word(id));
    size_t sentence = 0, begin = 0;
    for (size_t i = words.first; i < words.last; ++i) {
      const RawImage& raw = images[i];
      check_has_references(raw.id, raw.references->size());
      for (size_t k = 0; k <= raw.references->size(); ++k)
        check_caption_size(raw.id, words.sentence_ends[sentence + k] - (k == 0 ? begin : words.sentence_ends[sentence + k - 1]),
                           static_cast<long>(k) - 1, "words", kMaxCaptionWords);
      Image image;
      image.id = raw.id;
      image.first_sentence = sentence_offsets_.size() - 1;
      image.reference_count = raw.references->size();
      for (size_t k = 0; k <= raw.references->size(); ++k, ++sentence) {
        const size_t end = words.sentence_ends[sentence];
        for (size_t w = begin; w < end; ++w) word_ids_.push_back(to_set[words.ids[w]]);
        sentence_offsets_.push_back(word_ids_.size());
        begin = end;
      }
      images_.push_back(std::move(image));
    }
  }
}

EvalSet::Sentence EvalSet::candidate(size_t image) const {
  const size_t s = images_[image].first_sentence;
  return {word_ids_.data() + sentence_offsets_[s], sentence_offsets_[s + 1] - sentence_offsets_[s]};
}

EvalSet::Sentence EvalSet::reference(size_t image, size_t r) const {
  const size_t s = images_[image].first_sentence + 1 + r;
  return {word_ids_.data() + sentence_offsets_[s], sentence_offsets_[s + 1] - sentence_offsets_[s]};
}

uint32_t EvalSet::vocabulary_size() const { return words_->table.size(); }

// ---------------------------------------------------------------------------
// Scorers over an EvalSet

namespace {

double mean(const std::vector<double>& values) {
  if (values.empty()) return 0.0;
  double sum = 0;
  for (const double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

// BLEU's n-grams of one image, keyed by up to four 16-bit image-local word numbers
// (1-based, 0 = no word, so the key also tells the order). An open-addressing table
// of stamped slots, never cleared: per n-gram, its largest count in one reference so
// far and its count in the sentence being read. A candidate occurrence is correct
// while its count is within that largest count, which sums to pycocoevalcap's
// min(candidate count, max reference count) without sorting anything.
class ClippedNgramCounts {
 public:
  explicit ClippedNgramCounts(uint32_t vocabulary) : stamp_(vocabulary, 0), local_(vocabulary, 0) {}
  // `ngrams`: at most how many n-grams the image's sentences hold together.
  void next_image(const std::string& image_id, size_t ngrams) {
    ++image_;
    next_word_ = 0;
    image_id_ = &image_id;
    size_t size = 64;
    while (size < 2 * ngrams) size *= 2;
    if (size > slots_.size()) {
      slots_.assign(size, Slot{});
      mask_ = size - 1;
      shift_ = 64 - __builtin_ctzll(size);
    }
  }
  void add_reference(const EvalSet::Sentence& sentence, uint32_t reference) {
    for_each_ngram(sentence, [&](uint64_t key, int) {
      Slot& slot = find(key);
      if (slot.sentence != reference + 1) slot.sentence = reference + 1, slot.count = 0;
      slot.maximum = std::max(slot.maximum, ++slot.count);
    });
  }
  // Adds the candidate's clipped matches to correct[n - 1].
  void match_candidate(const EvalSet::Sentence& sentence, double correct[4]) {
    for_each_ngram(sentence, [&](uint64_t key, int order) {
      Slot& slot = find(key);
      if (slot.sentence != kCandidate) slot.sentence = kCandidate, slot.count = 0;
      if (++slot.count <= slot.maximum) correct[order] += 1;
    });
  }

 private:
  static constexpr uint32_t kCandidate = ~uint32_t{0};
  struct Slot {
    uint64_t key = 0;
    uint32_t image = 0, sentence = 0, count = 0, maximum = 0;
  };
  template <typename Visit>
  void for_each_ngram(const EvalSet::Sentence& sentence, Visit&& visit) {
    for (size_t i = 0; i < sentence.size; ++i) {
      uint64_t key = 0;
      for (size_t k = 0; k < 4 && i + k < sentence.size; ++k) {
        key |= uint64_t{local(sentence.words[i + k])} << (16 * k);
        visit(key, static_cast<int>(k));
      }
    }
  }
  Slot& find(uint64_t key) {
    for (size_t i = (key * 0x9E3779B97F4A7C15ULL) >> shift_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.image != image_) {
        slot = {key, image_, 0, 0, 0};
        return slot;
      }
      if (slot.key == key) return slot;
    }
  }
  uint32_t local(uint32_t word) {
    if (stamp_[word] != image_) {
      if (next_word_ == 0xFFFF)
        throw std::runtime_error("image '" + *image_id_ + "' has more than 65535 distinct words; BLEU cannot score it");
      stamp_[word] = image_;
      local_[word] = ++next_word_;
    }
    return local_[word];
  }
  std::vector<uint32_t> stamp_, local_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  uint32_t image_ = 0, next_word_ = 0;
  const std::string* image_id_ = nullptr;
};

// BLEU's sums over images; integers held in doubles, so any split adds up exactly.
struct BleuTotals {
  double guess[4] = {0, 0, 0, 0}, correct[4] = {0, 0, 0, 0};
  double test_length = 0, reference_length = 0;
};

// Images [first, last) of `set`: their scores into `per_image`, their counts into `totals`.
void bleu_of_images(const EvalSet& set, size_t first, size_t last, std::vector<std::array<double, 4>>& per_image,
                    BleuTotals& totals) {
  constexpr double kTiny = 1e-15, kSmall = 1e-9;  // pycocoevalcap's constants
  ClippedNgramCounts ngrams(set.vocabulary_size());
  for (size_t image = first; image < last; ++image) {
    const auto candidate = set.candidate(image);
    const auto test_length = static_cast<long>(candidate.size);
    size_t words = candidate.size;
    for (size_t r = 0; r < set.reference_count(image); ++r) words += set.reference(image, r).size;
    ngrams.next_image(set.image_id(image), 4 * words);

    // Largest count of each n-gram in one reference; the "closest" reference
    // length (ties: the shorter one).
    long closest = -1;
    for (size_t r = 0; r < set.reference_count(image); ++r) {
      const auto reference = set.reference(image, r);
      ngrams.add_reference(reference, static_cast<uint32_t>(r));
      const auto length = static_cast<long>(reference.size);
      if (closest < 0 || std::labs(length - test_length) < std::labs(closest - test_length) ||
          (std::labs(length - test_length) == std::labs(closest - test_length) && length < closest))
        closest = length;
    }
    double correct[4] = {0, 0, 0, 0};
    ngrams.match_candidate(candidate, correct);

    std::array<double, 4> scores{};
    double bleu = 1.0;
    for (int k = 0; k < 4; ++k) {
      const double guess = static_cast<double>(std::max(0L, test_length - k));
      totals.guess[k] += guess;
      totals.correct[k] += correct[k];
      bleu *= (correct[k] + kTiny) / (guess + kSmall);
      scores[k] = std::pow(bleu, 1.0 / (k + 1));
    }
    const double ratio = (static_cast<double>(test_length) + kTiny) / (static_cast<double>(closest) + kSmall);
    if (ratio < 1)
      for (double& s : scores) s *= std::exp(1 - 1 / ratio);
    per_image[image] = scores;
    totals.test_length += static_cast<double>(test_length);
    totals.reference_length += static_cast<double>(closest);
  }
}

}  // namespace

// The images split in ranges over the machine's cores (each image's scores are its own).
BleuScores compute_bleu(const EvalSet& set) {
  constexpr double kTiny = 1e-15, kSmall = 1e-9;
  BleuScores result;
  result.per_image.resize(set.size());
  std::vector<BleuTotals> totals(16);  // one per range; an image of over 65,535 distinct words throws
  totals.resize(for_image_ranges(set.size(), [&](size_t first, size_t last, size_t range) {
    bleu_of_images(set, first, last, result.per_image, totals[range]);
  }));
  BleuTotals sum;
  for (const BleuTotals& t : totals) {
    for (int k = 0; k < 4; ++k) sum.guess[k] += t.guess[k], sum.correct[k] += t.correct[k];
    sum.test_length += t.test_length;
    sum.reference_length += t.reference_length;
  }
  double bleu = 1.0;
  for (int k = 0; k < 4; ++k) {
    bleu *= (sum.correct[k] + kTiny) / (sum.guess[k] + kSmall);
    result.corpus[k] = std::pow(bleu, 1.0 / (k + 1));
  }
  const double ratio = (sum.test_length + kTiny) / (sum.reference_length + kSmall);
  if (ratio < 1)
    for (double& s : result.corpus) s *= std::exp(1 - 1 / ratio);
  return result;
}

namespace {

// pycocoevalcap splits on " ", so an empty sentence is one empty token (which
// only an empty reference matches).
constexpr uint32_t kEmptyToken = kNone - 1;

// One row of the dynamic programme: linear space; EvalSet::add caps the time
// (kMaxCaptionWords).
size_t longest_common_subsequence(const uint32_t* a, size_t a_size, const uint32_t* b, size_t b_size,
                                  std::vector<uint32_t>& row) {
  if (a_size < b_size) {
    std::swap(a, b);
    std::swap(a_size, b_size);
  }
  row.assign(b_size + 1, 0);
  for (size_t i = 0; i < a_size; ++i) {
    uint32_t diagonal = 0;  // row[j] of the previous i
    for (size_t j = 0; j < b_size; ++j) {
      const uint32_t above = row[j + 1];
      row[j + 1] = a[i] == b[j] ? diagonal + 1 : std::max(above, row[j]);
      diagonal = above;
    }
  }
  return row[b_size];
}

}  // namespace

MetricScores compute_rouge_l(const EvalSet& set) {
  constexpr double kBeta = 1.2;
  MetricScores result;
  result.per_image.reserve(set.size());
  std::vector<uint32_t> row;
  const uint32_t empty_token = kEmptyToken;
  for (size_t image = 0; image < set.size(); ++image) {
    auto candidate = set.candidate(image);
    if (candidate.size == 0) candidate = {&empty_token, 1};
    double best_precision = 0, best_recall = 0;
    for (size_t r = 0; r < set.reference_count(image); ++r) {
      auto reference = set.reference(image, r);
      if (reference.size == 0) reference = {&empty_token, 1};
      const auto lcs = static_cast<double>(
          longest_common_subsequence(reference.words, reference.size, candidate.words, candidate.size, row));
      best_precision = std::max(best_precision, lcs / static_cast<double>(candidate.size));
      best_recall = std::max(best_recall, lcs / static_cast<double>(reference.size));
    }
    double score = 0;
    if (best_precision != 0 && best_recall != 0)
      score = ((1 + kBeta * kBeta) * best_precision * best_recall) / (best_recall + kBeta * kBeta * best_precision);
    result.per_image.push_back(score);
  }
  result.corpus = mean(result.per_image);
  return result;
}

namespace {

constexpr uint32_t kCandidateBit = 0x80000000u;  // marks candidate words

// One n-gram occurrence to group: its key, where it starts, whose it is.
struct KeyedPosition {
  uint64_t key;
  uint32_t position;
  uint32_t image;  // kCandidateBit set for candidate words
};

// Stable LSD radix sort on the key, 8 bits a pass (the 256 bucket pointers
// stay in L1), all histograms from one read, single-bucket passes skipped.
void radix_sort(std::vector<KeyedPosition>& items, std::vector<KeyedPosition>& buffer, uint64_t max_key) {
  int passes = 0;
  while (passes < 8 && (max_key >> (8 * passes)) != 0) ++passes;
  std::vector<std::array<size_t, 256>> counts(static_cast<size_t>(passes));
  for (auto& c : counts) c.fill(0);
  for (const auto& item : items)
    for (int pass = 0; pass < passes; ++pass) ++counts[pass][(item.key >> (8 * pass)) & 0xFF];
  buffer.resize(items.size());
  for (int pass = 0; pass < passes; ++pass) {
    auto& c = counts[pass];
    if (std::count(c.begin(), c.end(), size_t{0}) == 255) continue;
    size_t sum = 0;
    for (auto& count : c) sum += std::exchange(count, sum);
    const int shift = 8 * pass;
    for (const auto& item : items) buffer[c[(item.key >> shift) & 0xFF]++] = item;
    items.swap(buffer);
  }
}

// One evaluated sentence in a flat word array.
struct FlatSentence {
  size_t begin, size;
  uint32_t image;
  bool reference;
};

struct WeightedNgram {
  uint64_t packed;  // id << 2 | n - 1
  double idf;
  bool operator<(const WeightedNgram& other) const { return packed < other.packed; }
};

// The tf-idf vector of a sentence whose n-grams carry their idf already and
// are sorted by id.
CiderVector weighted_vector(const std::vector<WeightedNgram>& ngrams, std::vector<CiderEntry>& arena, size_t length) {
  return cider_vector_of_sorted(
      ngrams.size(), [&](size_t i) { return ngrams[i].packed; }, [&](size_t i) { return ngrams[i].idf; }, arena, length);
}

}  // namespace

// The whole set is known up front, so n-grams get dense ids by sorting every
// occurrence (order by order, key = (id of the n-1 prefix, last word)) rather
// than by hashing: mostly sequential memory traffic, exact, candidates
// included (an n-gram no reference has gets df 0, as in pycocoevalcap).
MetricScores compute_cider_d(const EvalSet& set) {
  std::vector<uint32_t> words;
  std::vector<FlatSentence> sentences;
  auto add = [&](const EvalSet::Sentence& s, size_t image, bool reference) {
    sentences.push_back({words.size(), s.size, static_cast<uint32_t>(image), reference});
    words.insert(words.end(), s.words, s.words + s.size);
  };
  for (size_t image = 0; image < set.size(); ++image) {
    add(set.candidate(image), image, false);
    for (size_t r = 0; r < set.reference_count(image); ++r) add(set.reference(image, r), image, true);
  }
  const uint64_t vocabulary = std::max<uint32_t>(1, set.vocabulary_size());
  const double log_images = std::log(static_cast<double>(set.size()));

  // ngram_at[n][p]: the id (within order n) of the (n+1)-gram starting at flat
  // position p; idf_of[n][id] its idf (ids apart from idfs: 4 bytes a position to scatter).
  std::array<std::vector<uint32_t>, kMaxN> ngram_at;
  std::array<std::vector<double>, kMaxN> idf_of;
  std::array<uint64_t, kMaxN> first_id{};  // order n's ids, made unique across orders
  std::vector<uint32_t> run_of_image(set.size(), kNone);  // dedupes images within one n-gram
  std::vector<KeyedPosition> items, buffer;
  items.reserve(words.size());  // at most one n-gram of each order starts at a position
  uint64_t previous_count = 0;
  // Unigrams: the word ids are dense already; df with one stamp per word.
  {
    std::vector<uint32_t> df(vocabulary, 0), last_image(vocabulary, kNone);
    for (const auto& s : sentences)
      if (s.reference)
        for (size_t p = s.begin; p < s.begin + s.size; ++p)
          if (last_image[words[p]] != s.image) {
            last_image[words[p]] = s.image;
            ++df[words[p]];
          }
    idf_of[0].resize(vocabulary);
    for (size_t w = 0; w < vocabulary; ++w)
      idf_of[0][w] = log_images - std::log(std::max(1.0, static_cast<double>(df[w])));
    ngram_at[0].assign(words.begin(), words.end());
    previous_count = vocabulary;
  }
  for (size_t n = 1; n < static_cast<size_t>(kMaxN); ++n) {
    first_id[n] = first_id[n - 1] + previous_count;
    items.clear();
    for (const auto& s : sentences) {
      const uint32_t image = s.reference ? s.image : (s.image | kCandidateBit);
      for (size_t i = 0; i + n < s.size; ++i) {
        const size_t p = s.begin + i;
        const uint64_t last = words[p + n];
        // Key = (id of the prefix within order n-1, last word).
        items.push_back({uint64_t{ngram_at[n - 1][p]} * vocabulary + last, static_cast<uint32_t>(p), image});
      }
    }
    radix_sort(items, buffer, previous_count * vocabulary + vocabulary - 1);
    ngram_at[n].resize(words.size());
    idf_of[n].clear();
    uint32_t count = 0;
    for (size_t i = 0; i < items.size(); ++count) {
      // df: the images whose references hold the n-gram.
      uint32_t df = 0;
      size_t j = i;
      for (; j < items.size() && items[j].key == items[i].key; ++j) {
        const uint32_t image = items[j].image;
        if (!(image & kCandidateBit) && run_of_image[image] != count) {
          run_of_image[image] = count;
          ++df;
        }
      }
      idf_of[n].push_back(log_images - std::log(std::max(1.0, static_cast<double>(df))));
      for (; i < j; ++i) ngram_at[n][items[i].position] = count;
    }
    std::fill(run_of_image.begin(), run_of_image.end(), kNone);
    previous_count = count;
  }

  // Each image's score is its own: ranges of images over the machine's cores.
  std::vector<size_t> first_sentence(set.size() + 1, sentences.size());
  for (size_t k = sentences.size(); k-- > 0;)
    if (!sentences[k].reference) first_sentence[sentences[k].image] = k;
  MetricScores result;
  result.per_image.resize(set.size());
  const auto score_images = [&](size_t first, size_t last) {
    std::vector<WeightedNgram> ngrams;
    std::vector<CiderEntry> candidate_arena, reference_arena;
    std::vector<CiderVector> reference_vectors;
    auto vector_of = [&](const FlatSentence& s, std::vector<CiderEntry>& arena) {
      ngrams.clear();
      // Every id of order n is below every id of order n+1: sorting each order's
      // few n-grams sorts the whole sentence.
      for (size_t n = 0; n < static_cast<size_t>(kMaxN); ++n) {
        const size_t begin = ngrams.size();
        for (size_t i = 0; i + n < s.size; ++i) {
          const uint32_t id = ngram_at[n][s.begin + i];
          ngrams.push_back({((first_id[n] + id) << 2) | n, idf_of[n][id]});
        }
        std::sort(ngrams.begin() + static_cast<std::ptrdiff_t>(begin), ngrams.end());
      }
      return weighted_vector(ngrams, arena, s.size);
    };
    for (size_t image = first; image < last; ++image) {
      size_t k = first_sentence[image];
      candidate_arena.clear();
      const CiderVector candidate = vector_of(sentences[k], candidate_arena);
      reference_arena.clear();
      reference_vectors.clear();
      for (++k; k < sentences.size() && sentences[k].reference; ++k)
        reference_vectors.push_back(vector_of(sentences[k], reference_arena));
      result.per_image[image] =
          metrics_detail::cider_d_score(candidate, candidate_arena, reference_vectors, reference_arena);
    }
  };
  for_image_ranges(set.size(), [&](size_t first, size_t last, size_t) { score_images(first, last); });
  result.corpus = mean(result.per_image);
  return result;
}

}  // namespace expnet
