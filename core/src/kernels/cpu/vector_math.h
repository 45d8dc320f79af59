// Float32 row helpers written so that GCC vectorises them, shared by the CPU
// kernels (decoding steps, training's window attention): dot products, scaled
// row updates, a vectorisable exp, maxima and softmax. Inline: they vectorise
// to the width of each EXPNET_VECTOR_CLONES clone that calls them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

// On x86-64 the kernels are compiled for AVX-512 and AVX2 machines too (the dot
// products and row updates inline into each clone and vectorise to its
// width); the loader picks one.
#if defined(__x86_64__) && defined(__GNUC__)
#define EXPNET_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define EXPNET_VECTOR_CLONES
#endif

namespace expnet::vector_math {

inline float dot(const float* a, const float* b, int64_t n) {
  float s = 0.f;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

inline void add_scaled(float* out, float c, const float* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] += c * v[i];
}

// exp(x) that vectorises: Cephes' expf (2^n by rounding x / ln 2, the rest by a
// degree-6 polynomial, ln 2 split in two so the reduction stays exact), within
// 2 ulp of std::exp. LibTorch's vectorised exponentials would each start an
// OpenMP region, which inside a decoding step costs more than the arithmetic
// (docs/decoding.md). Clamped to [-87.3, 88]: exp(-87.3) ~ 1e-38 stands in for
// smaller values, which only ever meet sums of at least 1 here.
inline float exp_vectorisable(float x) {
  x = std::min(std::max(x, -87.33654f), 88.0f);
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (x * 1.44269504088896341f + kRound) - kRound;
  float r = x - n * 0.693359375f;
  r -= n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float two_to_n;
  std::memcpy(&two_to_n, &bits, sizeof two_to_n);
  return p * two_to_n;
}

// Blocks of kLanes running maxima / sums: written so that GCC vectorises them
// (an `omp simd` max reduction, or a float-to-double sum, stayed scalar;
// docs/performance.md, "A vectorised log-softmax").
constexpr int64_t kLanes = 16;

inline float max_of(const float* x, int64_t n) {
  float lanes[kLanes];
  for (int64_t j = 0; j < kLanes; ++j) lanes[j] = -std::numeric_limits<float>::infinity();
  const int64_t whole = n / kLanes * kLanes;
  for (int64_t i = 0; i < whole; i += kLanes)
    for (int64_t j = 0; j < kLanes; ++j) lanes[j] = lanes[j] > x[i + j] ? lanes[j] : x[i + j];
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < kLanes; ++j) m = std::max(m, lanes[j]);
  for (int64_t i = whole; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

// out[i] = exp(x[i] - shift) (out may be x); returns their sum, in float lanes
// over blocks of 64 values whose sums are accumulated in Sum: a vocabulary-sized
// row summed in float lanes alone drifts by up to 6.5e-6 relative on AVX2 (8
// lanes of 1250 terms), LibTorch's log_softmax by 9e-7.
template <typename Sum>
inline Sum exp_shifted(const float* x, float shift, float* out, int64_t n) {
  constexpr int64_t kBlock = 4 * kLanes;
  Sum sum = 0;
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    float lanes[kLanes] = {};
    for (int64_t k = 0; k < kBlock; k += kLanes)
      for (int64_t j = 0; j < kLanes; ++j) {
        out[i + k + j] = exp_vectorisable(x[i + k + j] - shift);
        lanes[j] += out[i + k + j];
      }
    float block = 0.f;
    for (int64_t j = 0; j < kLanes; ++j) block += lanes[j];
    sum += block;
  }
  for (; i < n; ++i) {
    out[i] = exp_vectorisable(x[i] - shift);
    sum += out[i];
  }
  return sum;
}

// Softmax of one row in place, as LibTorch computes it (shift by the max, scale by 1 / sum).
inline void softmax_in_place(float* x, int64_t n) {
  const float scale = 1.f / exp_shifted<float>(x, max_of(x, n), x, n);
  for (int64_t i = 0; i < n; ++i) x[i] *= scale;
}

}  // namespace expnet::vector_math
