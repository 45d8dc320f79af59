// Portable seeded randomness for the data code: std::mt19937_64 (its output
// sequence is fixed by the C++ standard) with our own unbiased integer
// distributions (std::uniform_int_distribution and std::shuffle are not
// portable across standard libraries), and splitmix64 to derive independent
// seeds per (seed, index, purpose).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <utility>
#include <vector>

namespace expnet::data {

inline uint64_t mix_seed(uint64_t seed, uint64_t index, uint64_t stream) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (index + 1) + 0xD1B54A32D192ED03ULL * stream;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  uint64_t next() { return engine_(); }
  // Uniform in [0, n), n >= 1, by rejection (no modulo bias).
  int64_t below(size_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = engine_();
    while (x >= limit);
    return static_cast<int64_t>(x % n);
  }
  int range(int lo, int hi) { return lo + static_cast<int>(below(static_cast<size_t>(hi - lo + 1))); }  // inclusive
  bool chance(int percent) { return below(100) < percent; }
  template <class T>
  const T& pick(const std::vector<T>& items) { return items[static_cast<size_t>(below(items.size()))]; }
  const char* pick(std::initializer_list<const char*> items) { return items.begin()[below(items.size())]; }
  // Fisher-Yates.
  template <class T>
  void shuffle(std::vector<T>& items) {
    for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[static_cast<size_t>(below(i))]);
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace expnet::data
