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

// Open addressing with linear probing; keys are never ~0.
class FlatU64Map {
 public:
  const uint32_t* find(uint64_t key) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.key == key) return &slot.value;
      if (slot.key == kEmpty) return nullptr;
    }
  }
  // Returns the value stored for key, storing `value` first when absent.
  uint32_t insert(uint64_t key, uint32_t value) {
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();
    for (size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.key == key) return slot.value;
      if (slot.key == kEmpty) {
        slot = {key, value};
        ++size_;
        return value;
      }
    }
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    uint32_t value = 0;
  };
  static size_t mix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return static_cast<size_t>(k);
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    size_ = 0;
    for (const Slot& slot : old)
      if (slot.key != kEmpty) insert(slot.key, slot.value);
  }
  std::vector<Slot> slots_;
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
  uint32_t insert(uint32_t prefix, uint32_t word) {
    const uint32_t id = map_.insert(key(prefix, word), static_cast<uint32_t>(map_.size()));
    return id;
  }
  uint32_t find(uint32_t prefix, uint32_t word) const {
    const uint32_t* id = map_.find(key(prefix, word));
    return id ? *id : kNone;
  }
  uint32_t size() const { return static_cast<uint32_t>(map_.size()); }
  static uint64_t key(uint32_t prefix, uint32_t word) { return (uint64_t{prefix + 1u} << 32) | word; }

 private:
  FlatU64Map map_;
};

// Reusable buffers for one sentence's n-grams.
struct NgramScratch {
  std::vector<uint32_t> previous, current;
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

// CIDEr-D with n = 4 and sigma 6: document frequencies over the references of
// a set of images, log of the number of images.
class CiderDModel {
 public:
  CiderDModel();
  // Call once per image with the word ids of its references; then finish().
  void add_image_references(const std::vector<std::pair<const uint32_t*, size_t>>& references);
  void finish();
  size_t image_count() const { return images_; }

  // Turns scratch.packed (from sentence_ngrams) into a vector appended to arena.
  CiderVector make_vector(NgramScratch& scratch, std::vector<CiderEntry>& arena, size_t sentence_length) const;
  // The CIDEr-D of one candidate against the vectors of its references.
  double score(const CiderVector& candidate, const std::vector<CiderEntry>& candidate_arena,
               const std::vector<CiderVector>& references, const std::vector<CiderEntry>& reference_arena) const;
  const NgramIndex& index() const { return index_; }

 private:
  double penalty(double delta) const;
  NgramIndex index_;
  std::vector<uint32_t> document_frequency_;
  std::vector<uint32_t> last_image_;  // dedupes n-grams within one image
  std::vector<double> idf_;            // log N - log max(1, df), by global id
  double log_images_ = 0;
  size_t images_ = 0;
  NgramScratch build_scratch_;
  std::vector<double> penalty_table_;  // exp(-delta^2 / 2 sigma^2) for small |delta|
};

}  // namespace expnet::metrics_detail
