// Internal tables of the scorers: flat hash maps keyed by integers (no string
// allocation on lookups), the word table, the n-gram index and the CIDEr-D
// vectors shared by the evaluation scorer and the SCST reward.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace expnet::metrics_detail {

constexpr uint32_t kNone = 0xFFFFFFFFu;
// Ids with this bit are local to one sentence: words or n-grams the index does
// not hold. Two equal unseen n-grams of a sentence get the same local id.
constexpr uint32_t kLocalBit = 0x80000000u;
constexpr int kMaxN = 4;

// Open addressing with linear probing; keys are never ~0. The slot array
// lives in huge pages where the kernel allows it: the tables of a corpus are
// tens of MB, and every lookup is a random access.
class FlatU64Map {
 public:
  FlatU64Map() = default;
  FlatU64Map(FlatU64Map&& other) noexcept { swap(other); }
  FlatU64Map& operator=(FlatU64Map&& other) noexcept {
    FlatU64Map moved(std::move(other));
    swap(moved);
    return *this;
  }
  FlatU64Map(const FlatU64Map&) = delete;
  FlatU64Map& operator=(const FlatU64Map&) = delete;
  ~FlatU64Map() { release(slots_, capacity_); }

  // Lookups are latency-bound: callers prefetch a batch of keys first.
  void prefetch(uint64_t key) const {
    if (capacity_) __builtin_prefetch(&slots_[mix(key) & mask_]);
  }
  const uint32_t* find(uint64_t key) const {
    if (!capacity_) return nullptr;
    for (size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.key == key) return &slot.value;
      if (slot.key == kEmpty) return nullptr;
    }
  }
  // Returns the value stored for key, storing `value` first when absent.
  uint32_t insert(uint64_t key, uint32_t value) {
    if ((size_ + 1) * 4 > capacity_ * 3) grow();
    for (size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.key == key) return slot.value;
      if (slot.key == kEmpty) {
        slot.key = key;
        slot.value = value;
        ++size_;
        return value;
      }
    }
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key;
    uint32_t value;
  };
  static size_t mix(uint64_t k) {  // murmur3's finaliser
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return static_cast<size_t>(k);
  }
  static Slot* allocate(size_t capacity);
  static void release(Slot* slots, size_t capacity);
  void swap(FlatU64Map& other) noexcept {
    std::swap(slots_, other.slots_);
    std::swap(capacity_, other.capacity_);
    std::swap(mask_, other.mask_);
    std::swap(size_, other.size_);
  }
  void grow() {
    Slot* old = slots_;
    const size_t old_capacity = capacity_;
    capacity_ = old_capacity ? old_capacity * 2 : 1024;
    slots_ = allocate(capacity_);
    mask_ = capacity_ - 1;
    size_ = 0;
    for (size_t i = 0; i < old_capacity; ++i)
      if (old[i].key != kEmpty) insert(old[i].key, old[i].value);
    release(old, old_capacity);
  }
  Slot* slots_ = nullptr;
  size_t capacity_ = 0;
  size_t mask_ = 0;
  size_t size_ = 0;
};

// Interned words; lookups by string_view allocate nothing.
class WordTable {
 public:
  uint32_t find(std::string_view word) const {
    if (slots_.empty()) return kNone;
    const uint64_t h = hash(word);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.id == kNone) return kNone;
      if (slot.hash == h && words_[slot.id] == word) return slot.id;
    }
  }
  uint32_t intern(std::string_view word) {
    const uint32_t found = find(word);
    if (found != kNone) return found;
    if ((words_.size() + 1) * 2 > slots_.size()) grow();
    const auto id = static_cast<uint32_t>(words_.size());
    words_.emplace_back(word);
    place(id, hash(word));
    return id;
  }
  uint32_t size() const { return static_cast<uint32_t>(words_.size()); }
  const std::string& word(uint32_t id) const { return words_[id]; }

 private:
  struct Slot {
    uint32_t id = kNone;
    uint64_t hash = 0;
  };
  static uint64_t hash(std::string_view word) {
    uint64_t h = 1469598103934665603ULL;  // FNV-1a, then a final mix
    for (const char c : word) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    return h ^ (h >> 29);
  }
  void place(uint32_t id, uint64_t h) {
    size_t i = h & mask_;
    while (slots_[i].id != kNone) i = (i + 1) & mask_;
    slots_[i] = {id, h};
  }
  void grow() {
    slots_.assign(slots_.empty() ? 256 : slots_.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    for (uint32_t id = 0; id < words_.size(); ++id) place(id, hash(words_[id]));
  }
  std::vector<std::string> words_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

// Global n-gram ids: an n-gram is (id of its first n-1 words, last word), so
// every key is exact and fits in 64 bits.
class NgramIndex {
 public:
  // key() of (prefix id or kNone for unigrams, word id) -> n-gram id.
  uint32_t insert_key(uint64_t key) { return map_.insert(key, static_cast<uint32_t>(map_.size())); }
  uint32_t find_key(uint64_t key) const {
    const uint32_t* id = map_.find(key);
    return id ? *id : kNone;
  }
  uint32_t size() const { return static_cast<uint32_t>(map_.size()); }
  void prefetch(uint64_t key) const { map_.prefetch(key); }
  static uint64_t key(uint32_t prefix, uint32_t word) { return (uint64_t{prefix + 1u} << 32) | word; }

 private:
  FlatU64Map map_;
};

// Reusable buffers for one sentence's n-grams.
struct NgramScratch {
  std::vector<uint32_t> previous, current;
  std::vector<uint64_t> keys;                          // of the current order
  std::vector<std::pair<uint64_t, uint32_t>> unseen;  // (key, position)
  std::vector<uint64_t> packed;                       // id << 2 | (n - 1), one per occurrence
};

// All n-grams (n = 1..4) of a sentence into scratch.packed. With `index`
// mutable they are inserted; otherwise unseen ones get local ids.
void sentence_ngrams(NgramIndex* insert_into, const NgramIndex& index, const uint32_t* words, size_t size,
                     NgramScratch& scratch);

// One sentence's CIDEr-D tf-idf vector: entries sorted by n-gram id.
struct CiderEntry {
  uint32_t id;
  uint32_t order;  // n - 1
  double weight;   // term frequency * (log N - log max(1, df))
};
struct CiderVector {
  size_t begin = 0, end = 0;  // range in an entry arena
  double norm[kMaxN] = {0, 0, 0, 0};
  double length = 0;  // pycocoevalcap's "length": the number of bigrams
};

// The one tf-idf builder: `count` packed n-grams (id << 2 | n - 1, one per
// occurrence) sorted by packed value, read through packed_at(i); idf_at(i) is
// the idf of the n-gram at i. Equal neighbours add up to its term frequency.
template <typename PackedAt, typename IdfAt>
CiderVector cider_vector_of_sorted(size_t count, PackedAt packed_at, IdfAt idf_at, std::vector<CiderEntry>& arena,
                                   size_t sentence_length) {
  CiderVector vector;
  vector.begin = arena.size();
  for (size_t i = 0; i < count;) {
    size_t j = i + 1;
    while (j < count && packed_at(j) == packed_at(i)) ++j;
    const auto order = static_cast<uint32_t>(packed_at(i) & 3);
    const double weight = static_cast<double>(j - i) * idf_at(i);
    arena.push_back({static_cast<uint32_t>(packed_at(i) >> 2), order, weight});
    vector.norm[order] += weight * weight;
    i = j;
  }
  vector.end = arena.size();
  for (double& norm : vector.norm) norm = std::sqrt(norm);
  // pycocoevalcap's "length" counts the bigrams (its `if n == 1` tests the
  // 0-based order): it differs from the word count only for empty sentences.
  vector.length = sentence_length >= 2 ? static_cast<double>(sentence_length - 1) : 0.0;
  return vector;
}

// Sorts packed n-grams (id << 2 | n - 1, one per occurrence) and turns them
// into a tf-idf vector appended to arena. idf[id] = log N - log max(1, df);
// ids at or beyond idf.size() (unseen, local) have df 0: idf = log N.
CiderVector make_cider_vector(std::vector<uint64_t>& packed, const std::vector<double>& idf, double log_images,
                              std::vector<CiderEntry>& arena, size_t sentence_length);
// The CIDEr-D (sigma 6, x10) of one candidate against its references' vectors.
double cider_d_score(const CiderVector& candidate, const std::vector<CiderEntry>& candidate_arena,
                     const std::vector<CiderVector>& references, const std::vector<CiderEntry>& reference_arena);

// CIDEr-D with n = 4 and sigma 6: document frequencies over the references of
// a set of images, log of the number of images, n-grams looked up in a hash
// index (the reward, whose candidates arrive later).
class CiderDModel {
 public:
  CiderDModel();
  // Call once per image with the word ids of its references; then finish().
  void add_image_references(const std::vector<std::pair<const uint32_t*, size_t>>& references);
  void finish();
  size_t image_count() const { return images_; }

  // Turns scratch.packed (from sentence_ngrams) into a vector appended to arena.
  CiderVector make_vector(NgramScratch& scratch, std::vector<CiderEntry>& arena, size_t sentence_length) const {
    return make_cider_vector(scratch.packed, idf_, log_images_, arena, sentence_length);
  }
  const NgramIndex& index() const { return index_; }

 private:
  NgramIndex index_;
  std::vector<uint32_t> document_frequency_;
  std::vector<uint32_t> last_image_;  // dedupes n-grams within one image
  std::vector<double> idf_;            // log N - log max(1, df), by global id
  double log_images_ = 0;
  size_t images_ = 0;
  NgramScratch build_scratch_;
};

}  // namespace expnet::metrics_detail
