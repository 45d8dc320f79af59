// See few_rows_linear.h. Why: a beam-5 decoding step multiplies 5 rows by
// every weight matrix of the decoder, and OpenBLAS packs each weight matrix
// into a buffer before multiplying, which at 5 rows costs more than the
// arithmetic; streaming each weight row once through FMA dot products is
// several times faster (docs/performance.md, "Decoding kernels").
#include "kernels/cpu/few_rows_linear.h"

#include "kernels/cpu/step_threads.h"

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define EXPNET_HAVE_AVX2_PATH 1
#endif

namespace expnet {
namespace {

// Weight rows per block of the AVX2 blocked kernel.
constexpr int kBlockOutputs = 3;

// The packed layout (packed_weight_cache.h): panels of
// kPanel weight rows, each in x kPanel floats, input-major.
constexpr int64_t kPanel = PackedWeight::kPanel;
constexpr int kPanelVectors = kPanel / 16;
constexpr int kPackedTileRows = 8;  // 8 x 3 accumulators + 3 weight vectors + 1 input fit the 32 registers

// y[r, o] = b[o] + sum_k x[r, k] w[o, k] for o in [first, last). W is the
// weight's element: float, or uint16_t holding bfloat16 bits, widened to
// float32 as it is loaded (x, b, y and the sums stay float32).
template <typename W>
struct OperandsOf {
  const float* x;
  const W* w;
  const float* b;  // or nullptr
  float* y;
  int64_t in, out;
};
using Operands = OperandsOf<float>;

inline float widen(float w) { return w; }
inline float widen(uint16_t w) {
  const uint32_t bits = static_cast<uint32_t>(w) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

template <int R, typename W>
void rows_portable(const OperandsOf<W>& op, int64_t first, int64_t last) {
  for (int64_t o = first; o < last; ++o) {
    const W* wr = op.w + o * op.in;
    float acc[R] = {};
    for (int64_t k = 0; k < op.in; ++k)
      for (int r = 0; r < R; ++r) acc[r] += widen(wr[k]) * op.x[r * op.in + k];
    for (int r = 0; r < R; ++r) op.y[r * op.out + o] = acc[r] + (op.b ? op.b[o] : 0.0f);
  }
}

#ifdef EXPNET_HAVE_AVX2_PATH
// Asks for the weights 32 KB past p into L2 (hint T1), once per cache line of
// a row the few-row kernels stream: a decoding step's weights (66 MB at
// official size) come from memory, and prefetching less far ahead (or not at
// all) made a step's products much slower (docs/performance.md, "Prefetching
// further ahead").
inline void prefetch_ahead(const void* p) { _mm_prefetch(static_cast<const char*>(p) + 32768, _MM_HINT_T1); }

__attribute__((target("avx2,fma"))) inline float horizontal_sum(__m256 v) {
  const __m128 pair = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 two = _mm_add_ps(pair, _mm_movehl_ps(pair, pair));
  return _mm_cvtss_f32(_mm_add_ss(two, _mm_shuffle_ps(two, two, 1)));
}

// 8 weights as float32: loaded, or bfloat16 bits shifted into the high half.
__attribute__((target("avx2,fma"))) inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
__attribute__((target("avx2,fma"))) inline __m256 load8(const uint16_t* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

// O weight rows at a time share each load of x: 2 for up to 6 input rows
// (2R accumulators + operands fit the 16 vector registers), else 1.
template <int R, typename W>
__attribute__((target("avx2,fma"))) void rows_avx2(const OperandsOf<W>& op, int64_t first, int64_t last) {
  constexpr int O = R <= 6 ? 2 : 1;
  constexpr int64_t kLine = 64 / sizeof(W);  // weights per cache line
  const int64_t in = op.in, whole = in / 8 * 8;
  int64_t o = first;
  for (; o + O <= last; o += O) {
    __m256 acc[O][R];
    for (int j = 0; j < O; ++j)
      for (int r = 0; r < R; ++r) acc[j][r] = _mm256_setzero_ps();
    for (int64_t k = 0; k < whole; k += 8) {
      __m256 wv[O];
      if (k % kLine == 0)
        for (int j = 0; j < O; ++j) prefetch_ahead(op.w + (o + j) * in + k);
      for (int j = 0; j < O; ++j) wv[j] = load8(op.w + (o + j) * in + k);
      for (int r = 0; r < R; ++r) {
        const __m256 xv = _mm256_loadu_ps(op.x + r * in + k);
        for (int j = 0; j < O; ++j) acc[j][r] = _mm256_fmadd_ps(wv[j], xv, acc[j][r]);
      }
    }
    for (int j = 0; j < O; ++j) {
      const W* wr = op.w + (o + j) * in;
      for (int r = 0; r < R; ++r) {
        float sum = horizontal_sum(acc[j][r]);
        for (int64_t k = whole; k < in; ++k) sum += widen(wr[k]) * op.x[r * in + k];
        op.y[r * op.out + o + j] = sum + (op.b ? op.b[o + j] : 0.0f);
      }
    }
  }
  if (o < last) rows_portable<R>(op, o, last);
}

// The AVX-512 kernels also use AVX512BW/VL (masked 16-bit loads); every
// AVX-512 CPU that is not a Xeon Phi has them.
#define EXPNET_AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))

// 16 weights as float32: all, or over the lanes of mask (the others 0).
EXPNET_AVX512_TARGET inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
EXPNET_AVX512_TARGET inline __m512 load16(const float* p, __mmask16 mask) { return _mm512_maskz_loadu_ps(mask, p); }
EXPNET_AVX512_TARGET inline __m512 widen16(__m256i bits) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
}
EXPNET_AVX512_TARGET inline __m512 load16(const uint16_t* p) {
  return widen16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
EXPNET_AVX512_TARGET inline __m512 load16(const uint16_t* p, __mmask16 mask) {
  return widen16(_mm256_maskz_loadu_epi16(mask, p));
}

// The lane sums of four vectors as one vector [sum a, sum b, sum c, sum d]:
// 12 shuffles and adds instead of four reductions of 8 each. A bf16 block of
// 4 x 5 sums over 512 inputs otherwise spends as long reducing as multiplying.
EXPNET_AVX512_TARGET inline __m128 sum_each_of_four(__m512 a, __m512 b, __m512 c, __m512 d) {
  // Quarters [a0+a2, a1+a3, b0+b2, b1+b3], the same for c and d, then quarter q
  // holds four partial sums of the q-th vector.
  const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
  const __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
  const __m512 q = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
  const __m512 pairs = _mm512_add_ps(q, _mm512_shuffle_ps(q, q, _MM_SHUFFLE(2, 3, 0, 1)));
  const __m512 whole = _mm512_add_ps(pairs, _mm512_shuffle_ps(pairs, pairs, _MM_SHUFFLE(1, 0, 3, 2)));
  const __m512i firsts = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castps512_ps128(_mm512_permutexvar_ps(firsts, whole));
}

// acc[j][r] += w[j * in + k .. +16] * x[r * in + k .. +16]: all 16 lanes, or
// (Masked) over the lanes of mask.
template <int R, int O, bool Masked, typename W>
EXPNET_AVX512_TARGET inline void fma_chunk(__m512 (&acc)[O][R], const W* w, const float* x, int64_t in, int64_t k,
                                           __mmask16 mask = 0xFFFF) {
  __m512 wv[O];
  for (int j = 0; j < O; ++j) wv[j] = Masked ? load16(w + j * in + k, mask) : load16(w + j * in + k);
  for (int r = 0; r < R; ++r) {
    const __m512 xv = Masked ? _mm512_maskz_loadu_ps(mask, x + r * in + k) : _mm512_loadu_ps(x + r * in + k);
    for (int j = 0; j < O; ++j) acc[j][r] = _mm512_fmadd_ps(wv[j], xv, acc[j][r]);
  }
}

// AVX-512: four weight rows at a time (four streams keep the hardware
// prefetcher busy; 4R accumulators fit the 32 registers up to R = 6), and
// prefetch_ahead once per cache line of each row. The tail of a row that is
// not a multiple of 16 goes through a masked load.
template <int R, int O, typename W>
EXPNET_AVX512_TARGET void rows_avx512_block(const OperandsOf<W>& op, int64_t o) {
  constexpr int64_t kLine = 64 / sizeof(W);              // weights per cache line
  const int64_t in = op.in, lines = in / kLine * kLine;
  __m512 acc[O][R];
  for (int j = 0; j < O; ++j)
    for (int r = 0; r < R; ++r) acc[j][r] = _mm512_setzero_ps();
  const W* w = op.w + o * in;
  int64_t k = 0;
  for (; k < lines; k += kLine) {
    for (int j = 0; j < O; ++j) prefetch_ahead(w + j * in + k);
    for (int64_t c = 0; c < kLine; c += 16) fma_chunk<R, O, false, W>(acc, w, op.x, in, k + c);
  }
  for (; k + 16 <= in; k += 16) fma_chunk<R, O, false, W>(acc, w, op.x, in, k);
  if (k < in) fma_chunk<R, O, true, W>(acc, w, op.x, in, k, static_cast<__mmask16>((1u << (in - k)) - 1));
  for (int j = 0; j < O; ++j)
    for (int r = 0; r < R; ++r)
      op.y[r * op.out + o + j] = _mm512_reduce_add_ps(acc[j][r]) + (op.b ? op.b[o + j] : 0.0f);
}

template <int R, typename W>
EXPNET_AVX512_TARGET void rows_avx512(const OperandsOf<W>& op, int64_t first, int64_t last) {
  int64_t o = first;
  for (; o + 4 <= last; o += 4) rows_avx512_block<R, 4, W>(op, o);
  for (; o < last; ++o) rows_avx512_block<R, 1, W>(op, o);
}

// More rows (a decoding step of several images) on CPUs with AVX2 but not
// AVX-512: tiles of 3 weight rows x 4 input rows (12 accumulators + 3 weight
// vectors + 1 input vector fill the 16 registers exactly); the weight rows stay
// in L1 while every group of 4 input rows passes over them, so each weight is
// read from memory once per call. Row tails that are not a multiple of 8 are
// summed in scalar. Written out in full: a first version through a helper
// spilled the accumulators.
template <int R, int O>
__attribute__((target("avx2,fma"))) void blocked_tile_avx2(const Operands& op, int64_t r0, int64_t o) {
  const int64_t in = op.in, whole = in / 8 * 8;
  const float* w = op.w + o * in;
  const float* x = op.x + r0 * in;
  __m256 acc[O][R];
  for (int j = 0; j < O; ++j)
    for (int r = 0; r < R; ++r) acc[j][r] = _mm256_setzero_ps();
  for (int64_t k = 0; k < whole; k += 8) {
    __m256 wv[O];
    for (int j = 0; j < O; ++j) wv[j] = _mm256_loadu_ps(w + j * in + k);
    for (int r = 0; r < R; ++r) {
      const __m256 xv = _mm256_loadu_ps(x + r * in + k);
      for (int j = 0; j < O; ++j) acc[j][r] = _mm256_fmadd_ps(wv[j], xv, acc[j][r]);
    }
  }
  for (int j = 0; j < O; ++j)
    for (int r = 0; r < R; ++r) {
      float sum = horizontal_sum(acc[j][r]);
      for (int64_t k = whole; k < in; ++k) sum += w[j * in + k] * x[r * in + k];
      op.y[(r0 + r) * op.out + o + j] = sum + (op.b ? op.b[o + j] : 0.0f);
    }
}

// Every input row, in groups of 4 then the rest, against weight rows [o, o + O).
template <int O>
void blocked_rows_group(const Operands& op, int64_t rows, int64_t o) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) blocked_tile_avx2<4, O>(op, r, o);
  switch (rows - r) {
    case 3: blocked_tile_avx2<3, O>(op, r, o); break;
    case 2: blocked_tile_avx2<2, O>(op, r, o); break;
    case 1: blocked_tile_avx2<1, O>(op, r, o); break;
    default: break;
  }
}

// Weight rows [first, last) in blocks of kBlockOutputs, then one at a time.
void blocked_avx2(const Operands& op, int64_t rows, int64_t first, int64_t last) {
  constexpr int O = kBlockOutputs;
  int64_t o = first;
  for (; o + O <= last; o += O) {
    for (int64_t j = 0; j < O; ++j)  // the next block, while this one computes
      _mm_prefetch(reinterpret_cast<const char*>(op.w + (o + O + j) * op.in), _MM_HINT_T0);
    blocked_rows_group<O>(op, rows, o);
  }
  for (; o < last; ++o) blocked_rows_group<1>(op, rows, o);
}

// Input rows [r0, r0 + R) x the panel's outputs [o0, o0 + kPanel): each input
// value is broadcast against three vectors of the panel's row k, so the sums
// come out as whole vectors of outputs. The last panel of a matrix whose
// output count is not a multiple of kPanel stores through a mask.
template <int R>
EXPNET_AVX512_TARGET void packed_tile(const Operands& op, const float* panel, int64_t r0, int64_t o0) {
  const int64_t in = op.in;
  const float* x = op.x + r0 * in;
  __m512 acc[R][kPanelVectors];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
    for (int j = 0; j < kPanelVectors; ++j) acc[r][j] = _mm512_setzero_ps();
  for (int64_t k = 0; k < in; ++k) {
    const float* p = panel + k * kPanel;
    __m512 wv[kPanelVectors];
#pragma GCC unroll 3
    for (int j = 0; j < kPanelVectors; ++j) wv[j] = _mm512_load_ps(p + 16 * j);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 xv = _mm512_set1_ps(x[r * in + k]);
#pragma GCC unroll 3
      for (int j = 0; j < kPanelVectors; ++j) acc[r][j] = _mm512_fmadd_ps(xv, wv[j], acc[r][j]);
    }
  }
  const int64_t valid = std::min(kPanel, op.out - o0);
  for (int j = 0; j < kPanelVectors; ++j) {
    const int64_t lanes = std::clamp<int64_t>(valid - 16 * j, 0, 16);
    const auto mask = static_cast<__mmask16>((1u << lanes) - 1);
    const __m512 bias = op.b ? _mm512_maskz_loadu_ps(mask, op.b + o0 + 16 * j) : _mm512_setzero_ps();
    for (int r = 0; r < R; ++r)
      _mm512_mask_storeu_ps(op.y + (r0 + r) * op.out + o0 + 16 * j, mask, _mm512_add_ps(acc[r][j], bias));
  }
}

// Panels [first, last) against every input row, in tiles of kPackedTileRows then the rest.
void packed_rows(const Operands& op, const float* panels, int64_t rows, int64_t first, int64_t last) {
  using Tile = void (*)(const Operands&, const float*, int64_t, int64_t);
  static constexpr Tile kRest[kPackedTileRows] = {nullptr,          packed_tile<1>, packed_tile<2>, packed_tile<3>,
                                                  packed_tile<4>, packed_tile<5>, packed_tile<6>, packed_tile<7>};
  for (int64_t p = first; p < last; ++p) {
    const float* panel = panels + p * op.in * kPanel;
    int64_t r = 0;
    for (; r + kPackedTileRows <= rows; r += kPackedTileRows) packed_tile<kPackedTileRows>(op, panel, r, p * kPanel);
    if (r < rows) kRest[rows - r](op, panel, r, p * kPanel);
  }
}

// bf16 decoding on CPUs with AVX512_BF16: x rounded to bfloat16 once per
// call, then vdpbf16ps multiplies 32 weight/input pairs per instruction into
// float32 sums. The widening kernels above spend two instructions per 16
// weights before their FMAs and run out of arithmetic before memory does;
// this one takes clearly less of the float32 kernel's time over a decoding
// step's matrices (docs/performance.md, "Figures behind choices in the code").
#define EXPNET_AVX512BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

struct DotOperands {
  const uint16_t* x;  // rows of `stride` bfloat16 values, zero past `in`
  const uint16_t* w;
  const float* b;  // or nullptr
  float* y;
  int64_t in, out, stride;
};

// Rounds x's rows to bfloat16 (to nearest even, as at::BFloat16 does) into
// rows of `stride` values (a multiple of 32), zero-padded.
EXPNET_AVX512BF16_TARGET void round_rows_to_bf16(const float* x, int64_t rows, int64_t in, int64_t stride,
                                                 uint16_t* out) {
  for (int64_t r = 0; r < rows; ++r) {
    uint16_t* row = out + r * stride;
    for (int64_t k = 0; k < stride; k += 16) {
      const int64_t lanes = std::clamp<int64_t>(in - k, 0, 16);
      const auto mask = static_cast<__mmask16>((1u << lanes) - 1);
      const __m256bh rounded = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, x + r * in + k));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + k), reinterpret_cast<const __m256i&>(rounded));
    }
  }
}

// O weight rows x R input rows (prefetch_ahead once per 64-byte chunk of each).
template <int R, int O>
EXPNET_AVX512BF16_TARGET void rows_dot_block(const DotOperands& op, int64_t o) {
  const int64_t in = op.in, whole = in / 32 * 32;
  __m512 acc[O][R];
  for (int j = 0; j < O; ++j)
    for (int r = 0; r < R; ++r) acc[j][r] = _mm512_setzero_ps();
  const uint16_t* w = op.w + o * in;
  for (int64_t k = 0; k < in; k += 32) {
    __m512i wv[O];
    if (k < whole) {
      for (int j = 0; j < O; ++j) prefetch_ahead(w + j * in + k);
      for (int j = 0; j < O; ++j) wv[j] = _mm512_loadu_si512(w + j * in + k);
    } else {
      const auto mask = static_cast<__mmask32>((1ull << (in - k)) - 1);
      for (int j = 0; j < O; ++j) wv[j] = _mm512_maskz_loadu_epi16(mask, w + j * in + k);
    }
    for (int r = 0; r < R; ++r) {
      const __m512i xv = _mm512_loadu_si512(op.x + r * op.stride + k);
      for (int j = 0; j < O; ++j)
        acc[j][r] = _mm512_dpbf16_ps(acc[j][r], reinterpret_cast<const __m512bh&>(wv[j]),
                                     reinterpret_cast<const __m512bh&>(xv));
    }
  }
  if constexpr (O == 4) {
    const __m128 bias = op.b ? _mm_loadu_ps(op.b + o) : _mm_setzero_ps();
    for (int r = 0; r < R; ++r)
      _mm_storeu_ps(op.y + r * op.out + o,
                    _mm_add_ps(sum_each_of_four(acc[0][r], acc[1][r], acc[2][r], acc[3][r]), bias));
  } else {
    for (int j = 0; j < O; ++j)
      for (int r = 0; r < R; ++r)
        op.y[r * op.out + o + j] = _mm512_reduce_add_ps(acc[j][r]) + (op.b ? op.b[o + j] : 0.0f);
  }
}

// Four weight rows at a time up to 6 input rows (24 accumulators), two above.
template <int R>
void rows_dot(const DotOperands& op, int64_t first, int64_t last) {
  constexpr int O = R <= 6 ? 4 : 2;
  int64_t o = first;
  for (; o + O <= last; o += O) rows_dot_block<R, O>(op, o);
  for (; o < last; ++o) rows_dot_block<R, 1>(op, o);
}

using DotKernel = void (*)(const DotOperands&, int64_t, int64_t);
DotKernel dot_kernel_for(int64_t rows_count) {
  static const DotKernel table[] = {rows_dot<1>, rows_dot<2>, rows_dot<3>, rows_dot<4>,
                                    rows_dot<5>, rows_dot<6>, rows_dot<7>, rows_dot<8>};
  static_assert(sizeof(table) / sizeof(table[0]) == kFewRowsLimit, "one kernel per row count");
  return table[rows_count - 1];
}

bool cpu_has_avx512_bf16() {
  static const bool has = __builtin_cpu_supports("avx512bf16");
  return has;
}

bool cpu_has_avx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl");
  return has;
}

bool cpu_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}
#endif

template <typename W>
using RowsKernel = void (*)(const OperandsOf<W>&, int64_t, int64_t);

template <template <int, typename> class Family, typename W>
RowsKernel<W> pick(int64_t rows_count) {
  static const RowsKernel<W> table[] = {Family<1, W>::run, Family<2, W>::run, Family<3, W>::run, Family<4, W>::run,
                                        Family<5, W>::run, Family<6, W>::run, Family<7, W>::run, Family<8, W>::run};
  static_assert(sizeof(table) / sizeof(table[0]) == kFewRowsLimit, "one kernel per row count");
  return table[rows_count - 1];
}
template <int R, typename W>
struct Portable {
  static void run(const OperandsOf<W>& op, int64_t first, int64_t last) { rows_portable<R>(op, first, last); }
};
#ifdef EXPNET_HAVE_AVX2_PATH
template <int R, typename W>
struct Avx2 {
  static void run(const OperandsOf<W>& op, int64_t first, int64_t last) { rows_avx2<R>(op, first, last); }
};
// Above 6 rows the 4-row AVX-512 blocks would spill registers; AVX2 measured faster there.
template <int R, typename W>
struct Avx512 {
  static void run(const OperandsOf<W>& op, int64_t first, int64_t last) {
    if constexpr (R <= 6) rows_avx512<R>(op, first, last);
    else rows_avx2<R>(op, first, last);
  }
};
#endif

template <typename W>
RowsKernel<W> kernel_for(int64_t rows_count, FewRowsIsa isa) {
  switch (isa) {
#ifdef EXPNET_HAVE_AVX2_PATH
    case FewRowsIsa::avx512_bf16:  // its own kernels are for bf16 weights (few_rows_linear_bf16)
    case FewRowsIsa::avx512: return pick<Avx512, W>(rows_count);
    case FewRowsIsa::avx2: return pick<Avx2, W>(rows_count);
#endif
    default: return pick<Portable, W>(rows_count);
  }
}

// The operands the row kernels can take at all: inference (no autograd), CPU,
// float32 x, a contiguous weight of `weight_type` (float32 for few_rows_linear,
// bfloat16 for few_rows_linear_bf16). Returns the row count, or 0.
int64_t eligible_rows(const at::Tensor& x, const at::Tensor& weight, at::ScalarType weight_type = at::kFloat) {
  if (at::GradMode::is_enabled() && !c10::InferenceMode::is_enabled()) return 0;
  if (!x.device().is_cpu() || !weight.device().is_cpu()) return 0;
  if (x.scalar_type() != at::kFloat || weight.scalar_type() != weight_type) return 0;
  if (weight.dim() != 2 || x.dim() < 1 || !weight.is_contiguous()) return 0;
  const int64_t in = weight.size(1);
  if (in == 0 || x.size(-1) != in) return 0;
  return x.numel() / in;
}

bool bias_fits(const at::Tensor& bias, const at::Tensor& weight) {
  return !bias.defined() || (bias.device().is_cpu() && bias.scalar_type() == at::kFloat && bias.dim() == 1 &&
                             bias.size(0) == weight.size(0));
}

bool own_path(int64_t rows_count, FewRowsIsa isa) {
  if (rows_count < 1) return false;
  if (rows_count <= kFewRowsLimit) return true;
  return isa != FewRowsIsa::portable && rows_count <= kBlockedRowsLimit;
}

}  // namespace

bool few_rows_linear_applies(const at::Tensor& x, const at::Tensor& weight) {
  return own_path(eligible_rows(x, weight), best_few_rows_isa());
}

FewRowsIsa best_few_rows_isa() {
#ifdef EXPNET_HAVE_AVX2_PATH
  if (cpu_has_avx512() && cpu_has_avx2_fma()) return cpu_has_avx512_bf16() ? FewRowsIsa::avx512_bf16 : FewRowsIsa::avx512;
  if (cpu_has_avx2_fma()) return FewRowsIsa::avx2;
#endif
  return FewRowsIsa::portable;
}

namespace {

// One product by the row kernels: x's rows made contiguous, the bias, y (x's
// shape with `out` last) and the kernels' operands over them; `w` the weight's data.
template <typename W>
struct StepProduct {
  at::Tensor input, bias, y;
  OperandsOf<W> op{};
};

template <typename W>
StepProduct<W> step_product(const at::Tensor& x, const W* w, const at::Tensor& bias, int64_t in, int64_t out) {
  const at::Tensor input = x.contiguous(), b = bias.defined() ? bias.contiguous() : bias;
  std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
  shape.back() = out;
  const at::Tensor y = at::empty(shape, input.options());
  const OperandsOf<W> op{input.data_ptr<float>(), w, b.defined() ? b.data_ptr<float>() : nullptr, y.data_ptr<float>(),
                         in, out};
  return {input, b, y, op};
}

void check_isa(FewRowsIsa isa, const char* function) {
  if (static_cast<int>(isa) > static_cast<int>(best_few_rows_isa()))
    throw std::invalid_argument(std::string(function) + ": this CPU lacks the requested instruction set");
}

// The shared body of the few_rows_linear overloads; `cache` may be null.
at::Tensor linear_step(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, FewRowsIsa isa,
                       PackedWeightCache* cache) {
  check_isa(isa, "few_rows_linear");
  const int64_t rows_count = eligible_rows(x, weight);
  if (!bias_fits(bias, weight) || !own_path(rows_count, isa)) return at::linear(x, weight, bias);
  const int64_t out = weight.size(0);
  const auto product = step_product(x, weight.data_ptr<float>(), bias, weight.size(1), out);
  const Operands& op = product.op;
  const at::Tensor& y = product.y;
  if (rows_count <= kFewRowsLimit) {
    // Bound by reading W: a second core adds its own share of memory
    // bandwidth (docs/performance.md, "Figures behind choices in the code").
    const auto kernel = kernel_for<float>(rows_count, isa);
    // Outputs split over the decoding threads (step_threads.h) in whole blocks of 4 weight rows.
    parallel_step(out, 4, [&](int64_t first, int64_t last) { kernel(op, first, last); });
    return y;
  }
#ifdef EXPNET_HAVE_AVX2_PATH
  // Bound by arithmetic: each thread takes whole panels, or whole blocks of the AVX2 kernel.
  if (isa >= FewRowsIsa::avx512) {
    PackedWeightCache for_this_call;  // callers without a cache (tests) pack for the call alone
    const auto packed = (cache ? *cache : for_this_call).get(weight);
    const float* panels = packed->panels.data_ptr<float>();
    parallel_step(packed->panels.size(0), 1,
                  [&](int64_t first, int64_t last) { packed_rows(op, panels, rows_count, first, last); });
    return y;
  }
  parallel_step(out, kBlockOutputs, [&](int64_t first, int64_t last) { blocked_avx2(op, rows_count, first, last); });
  return y;
#else
  return at::linear(x, weight, bias);  // own_path never sends more rows here without AVX2
#endif
}

}  // namespace

bool few_rows_linear_bf16_applies(const at::Tensor& x, const at::Tensor& weight_bf16) {
  const int64_t rows_count = eligible_rows(x, weight_bf16, at::kBFloat16);
  return rows_count >= 1 && rows_count <= kFewRowsLimit;
}

at::Tensor few_rows_linear_bf16(const at::Tensor& x, const at::Tensor& weight_bf16, const at::Tensor& bias,
                                FewRowsIsa isa) {
  check_isa(isa, "few_rows_linear_bf16");
  if (!few_rows_linear_bf16_applies(x, weight_bf16) || !bias_fits(bias, weight_bf16))
    throw std::invalid_argument("few_rows_linear_bf16: needs float32 x of at most 8 rows, a contiguous bfloat16 "
                                "weight and a float32 bias, on the CPU, without autograd");
  const int64_t in = weight_bf16.size(1), out = weight_bf16.size(0), rows_count = x.numel() / in;
  const auto product = step_product(x, static_cast<const uint16_t*>(weight_bf16.data_ptr()), bias, in, out);
#ifdef EXPNET_HAVE_AVX2_PATH
  if (isa == FewRowsIsa::avx512_bf16) {
    const int64_t stride = (in + 31) / 32 * 32;
    thread_local std::vector<uint16_t> rounded_x;
    rounded_x.resize(static_cast<size_t>(rows_count * stride));
    round_rows_to_bf16(product.op.x, rows_count, in, stride, rounded_x.data());
    const DotOperands op{rounded_x.data(), product.op.w, product.op.b, product.op.y, in, out, stride};
    const auto kernel = dot_kernel_for(rows_count);
    parallel_step(out, 4, [&](int64_t first, int64_t last) { kernel(op, first, last); });
    return product.y;
  }
#endif
  const auto kernel = kernel_for<uint16_t>(rows_count, isa);
  parallel_step(out, 4, [&](int64_t first, int64_t last) { kernel(product.op, first, last); });
  return product.y;
}

at::Tensor few_rows_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return linear_step(x, weight, bias, best_few_rows_isa(), nullptr);
}

at::Tensor few_rows_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, FewRowsIsa isa) {
  return linear_step(x, weight, bias, isa, nullptr);
}

at::Tensor few_rows_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                           PackedWeightCache& cache) {
  return linear_step(x, weight, bias, best_few_rows_isa(), &cache);
}

}  // namespace expnet
