// See swin_bf16_kernels.h.
#include "kernels/cpu/swin_bf16_kernels.h"

#include "kernels/cpu/few_rows_linear.h"
#include "kernels/cpu/step_threads.h"

#include <ATen/Functions.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define EXPNET_HAVE_SWIN_BF16_KERNELS 1
#endif

namespace expnet {
namespace {

// Rows up to this length stay in registers between the passes (window softmax).
constexpr int64_t kMaxRowVectors = 16;

#ifdef EXPNET_HAVE_SWIN_BF16_KERNELS
#define EXPNET_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// The first min(remaining, 16) lanes of a vector.
inline __mmask16 lanes_up_to(int64_t remaining) {
  return static_cast<__mmask16>((1u << std::clamp<int64_t>(remaining, 0, 16)) - 1);
}

// exp over 16 lanes: Cephes' expf, as exp_vectorisable in step_kernels.cpp
// (2^n by rounding x / ln 2, the rest by a degree-6 polynomial), within 2 ulp.
EXPNET_BF16_TARGET inline __m512 exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.33654f)), _mm512_set1_ps(88.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

EXPNET_BF16_TARGET inline __m512 load_bf16(const uint16_t* p, __mmask16 lanes) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(lanes, p)), 16));
}

struct Rows {
  uint16_t* scores;
  float scale;  // of the scores, before the bias
  const float* bias;
  const float* mask;  // or nullptr
  int64_t heads, n, mask_windows;
};

EXPNET_BF16_TARGET void softmax_rows(const Rows& op, int64_t first, int64_t last) {
  const int64_t n = op.n, vectors = (n + 15) / 16;
  __m512 v[kMaxRowVectors];
  for (int64_t row = first; row < last; ++row) {
    const int64_t i = row % n, head = row / n % op.heads, window = row / (n * op.heads);
    uint16_t* x = op.scores + row * n;
    const float* b = op.bias + (head * n + i) * n;
    const float* m = op.mask ? op.mask + (window % op.mask_windows * n + i) * n : nullptr;
    __m512 top = _mm512_set1_ps(-INFINITY);
    for (int64_t c = 0; c < vectors; ++c) {
      const auto lanes = lanes_up_to(n - 16 * c);
      __m512 t = _mm512_fmadd_ps(load_bf16(x + 16 * c, lanes), _mm512_set1_ps(op.scale), _mm512_maskz_loadu_ps(lanes, b + 16 * c));
      if (m) t = _mm512_add_ps(t, _mm512_maskz_loadu_ps(lanes, m + 16 * c));
      v[c] = _mm512_mask_blend_ps(lanes, _mm512_set1_ps(-INFINITY), t);  // lanes past n add exp(-inf) = 0
      top = _mm512_max_ps(top, v[c]);
    }
    const __m512 shift = _mm512_set1_ps(_mm512_reduce_max_ps(top));
    __m512 sum = _mm512_setzero_ps();
    for (int64_t c = 0; c < vectors; ++c) {
      v[c] = exp16(_mm512_sub_ps(v[c], shift));
      sum = _mm512_add_ps(sum, v[c]);
    }
    const __m512 scale = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
    for (int64_t c = 0; c < vectors; ++c) {
      const auto lanes = lanes_up_to(n - 16 * c);
      const __m256bh rounded = _mm512_cvtneps_pbh(_mm512_mul_ps(v[c], scale));
      _mm256_mask_storeu_epi16(x + 16 * c, lanes, reinterpret_cast<const __m256i&>(rounded));
    }
  }
}

struct NormRows {
  const float* x;
  const float* weight;
  const float* bias;
  uint16_t* y;
  int64_t c;
  float eps;
};

// Two passes for the statistics (mean, then the mean square about it, as
// accurate as LibTorch's), a third writes the rounded output; a row of up to
// 1536 floats stays in L1 between them.
EXPNET_BF16_TARGET void layer_norm_rows(const NormRows& op, int64_t first, int64_t last) {
  const int64_t c = op.c, whole = c / 16 * 16;
  const auto tail = static_cast<__mmask16>((1u << (c - whole)) - 1);
  for (int64_t row = first; row < last; ++row) {
    const float* x = op.x + row * c;
    uint16_t* y = op.y + row * c;
    __m512 sum = _mm512_setzero_ps();
    for (int64_t k = 0; k < whole; k += 16) sum = _mm512_add_ps(sum, _mm512_loadu_ps(x + k));
    if (tail) sum = _mm512_add_ps(sum, _mm512_maskz_loadu_ps(tail, x + whole));
    const float mean = _mm512_reduce_add_ps(sum) / static_cast<float>(c);
    const __m512 centre = _mm512_set1_ps(mean);
    __m512 squares = _mm512_setzero_ps();
    for (int64_t k = 0; k < whole; k += 16) {
      const __m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + k), centre);
      squares = _mm512_fmadd_ps(d, d, squares);
    }
    if (tail) {
      const __m512 d = _mm512_maskz_sub_ps(tail, _mm512_maskz_loadu_ps(tail, x + whole), centre);
      squares = _mm512_fmadd_ps(d, d, squares);
    }
    const float variance = _mm512_reduce_add_ps(squares) / static_cast<float>(c);
    const __m512 scale = _mm512_set1_ps(1.0f / std::sqrt(variance + op.eps));
    for (int64_t k = 0; k < c; k += 16) {
      const auto lanes = k < whole ? static_cast<__mmask16>(0xFFFF) : tail;
      const __m512 normal = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(lanes, x + k), centre), scale);
      const __m512 out = _mm512_fmadd_ps(normal, _mm512_maskz_loadu_ps(lanes, op.weight + k),
                                         _mm512_maskz_loadu_ps(lanes, op.bias + k));
      const __m256bh rounded = _mm512_cvtneps_pbh(out);
      _mm256_mask_storeu_epi16(y + k, lanes, reinterpret_cast<const __m256i&>(rounded));
    }
  }
}

// 0.5 x (1 + erf(x / sqrt 2)); erf(z) = sign(z) (1 - poly(t) exp(-z^2)) with
// t = 1 / (1 + p |z|), Abramowitz and Stegun 7.1.26 (absolute error <= 1.5e-7).
EXPNET_BF16_TARGET inline __m512 gelu16(__m512 x) {
  const __m512 z = _mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f));
  const __m512 a = _mm512_abs_ps(z);
  // t = 1 / (1 + p a): rcp14 and one Newton step (relative error ~1e-8), where a division costs several times more.
  const __m512 y = _mm512_fmadd_ps(a, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f));
  const __m512 r = _mm512_rcp14_ps(y);
  const __m512 t = _mm512_mul_ps(r, _mm512_fnmadd_ps(y, r, _mm512_set1_ps(2.0f)));
  __m512 poly = _mm512_set1_ps(1.061405429f);
  poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(-1.453152027f));
  poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(1.421413741f));
  poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(-0.284496736f));
  poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(0.254829592f));
  poly = _mm512_mul_ps(poly, t);
  const __m512 erf_abs = _mm512_fnmadd_ps(poly, exp16(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), a), a)),
                                          _mm512_set1_ps(1.0f));
  // sign(z) erf(|z|): copy z's sign bit onto the non-negative erf(|z|)
  const __m512i sign = _mm512_and_epi32(_mm512_castps_si512(z), _mm512_set1_epi32(static_cast<int>(0x80000000u)));
  const __m512 erf = _mm512_castsi512_ps(_mm512_or_epi32(_mm512_castps_si512(erf_abs), sign));
  return _mm512_mul_ps(_mm512_mul_ps(x, _mm512_set1_ps(0.5f)), _mm512_add_ps(erf, _mm512_set1_ps(1.0f)));
}

// A row of c values: GELU(x + bias) (bias may be null).
EXPNET_BF16_TARGET void gelu_row(uint16_t* x, const float* bias, int64_t c) {
  for (int64_t k = 0; k < c; k += 16) {
    const auto lanes = lanes_up_to(c - k);
    __m512 v = load_bf16(x + k, lanes);
    if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(lanes, bias + k));
    const __m256bh rounded = _mm512_cvtneps_pbh(gelu16(v));
    _mm256_mask_storeu_epi16(x + k, lanes, reinterpret_cast<const __m256i&>(rounded));
  }
}

// out[k] = x[k] + widen(rows[k]) + bias[k] for k < c (bias may be null; out may be x).
EXPNET_BF16_TARGET void add_widened(const float* x, const uint16_t* rows, const float* bias, float* out, int64_t c) {
  for (int64_t k = 0; k < c; k += 16) {
    const auto lanes = lanes_up_to(c - k);
    __m512 sum = _mm512_add_ps(_mm512_maskz_loadu_ps(lanes, x + k), load_bf16(rows + k, lanes));
    if (bias) sum = _mm512_add_ps(sum, _mm512_maskz_loadu_ps(lanes, bias + k));
    _mm512_mask_storeu_ps(out + k, lanes, sum);
  }
}

// out[k] = bfloat16(widen(x[k]) + bias[k]) for k < c (a copy when bias is null).
EXPNET_BF16_TARGET void add_bias_bf16(const uint16_t* x, const float* bias, uint16_t* out, int64_t c) {
  if (!bias) {
    std::memcpy(out, x, c * sizeof(uint16_t));
    return;
  }
  for (int64_t k = 0; k < c; k += 16) {
    const auto lanes = lanes_up_to(c - k);
    const __m256bh rounded = _mm512_cvtneps_pbh(_mm512_add_ps(load_bf16(x + k, lanes), _mm512_maskz_loadu_ps(lanes, bias + k)));
    _mm256_mask_storeu_epi16(out + k, lanes, reinterpret_cast<const __m256i&>(rounded));
  }
}

// bfloat16 of c floats, rounded to nearest even.
EXPNET_BF16_TARGET void round_row(const float* x, uint16_t* out, int64_t c) {
  for (int64_t k = 0; k < c; k += 16) {
    const auto lanes = lanes_up_to(c - k);
    const __m256bh rounded = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(lanes, x + k));
    _mm256_mask_storeu_epi16(out + k, lanes, reinterpret_cast<const __m256i&>(rounded));
  }
}

#endif

// The instruction sets these kernels are compiled for, as the decoding kernels detect them.
bool cpu_runs_it() { return best_few_rows_isa() == FewRowsIsa::avx512_bf16; }

bool contiguous_cpu(const at::Tensor& t, at::ScalarType type) {
  return t.defined() && t.device().is_cpu() && t.scalar_type() == type && t.is_contiguous();
}

}  // namespace

bool window_softmax_bf16_applies(const at::Tensor& scores, const at::Tensor& bias, const at::Tensor& mask) {
  if (!cpu_runs_it() || !contiguous_cpu(scores, at::kBFloat16) || !contiguous_cpu(bias, at::kFloat)) return false;
  if (scores.dim() != 4 || bias.dim() != 3) return false;
  const int64_t heads = scores.size(1), n = scores.size(2);
  if (n < 1 || n > 16 * kMaxRowVectors || scores.size(3) != n) return false;
  if (bias.size(0) != heads || bias.size(1) != n || bias.size(2) != n) return false;
  if (!mask.defined()) return true;
  return contiguous_cpu(mask, at::kFloat) && mask.dim() == 3 && mask.size(0) >= 1 &&
         scores.size(0) % mask.size(0) == 0 && mask.size(1) == n && mask.size(2) == n;
}

void window_softmax_bf16_(at::Tensor& scores, const at::Tensor& bias, const at::Tensor& mask, double scale) {
  if (!window_softmax_bf16_applies(scores, bias, mask))
    throw std::invalid_argument("window_softmax_bf16_: needs an AVX512_BF16 CPU, contiguous bfloat16 scores "
                                "(windows x heads x N x N, N <= 256), a float32 bias (heads x N x N) and an optional "
                                "float32 mask (W x N x N, W dividing the windows)");
#ifdef EXPNET_HAVE_SWIN_BF16_KERNELS
  const Rows op{static_cast<uint16_t*>(scores.data_ptr()), static_cast<float>(scale), bias.data_ptr<float>(),
                mask.defined() ? mask.data_ptr<float>() : nullptr, scores.size(1), scores.size(2),
                mask.defined() ? mask.size(0) : 1};
  parallel_step(scores.numel() / op.n, 256, [&](int64_t first, int64_t last) { softmax_rows(op, first, last); });
#endif
}

bool layer_norm_to_bf16_applies(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  if (!cpu_runs_it() || !contiguous_cpu(x, at::kFloat) || x.dim() < 1 || x.size(-1) < 1) return false;
  const int64_t c = x.size(-1);
  return contiguous_cpu(weight, at::kFloat) && contiguous_cpu(bias, at::kFloat) && weight.dim() == 1 &&
         bias.dim() == 1 && weight.size(0) == c && bias.size(0) == c;
}

at::Tensor layer_norm_to_bf16(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps) {
  if (!layer_norm_to_bf16_applies(x, weight, bias))
    throw std::invalid_argument("layer_norm_to_bf16: needs an AVX512_BF16 CPU and contiguous float32 x, weight and "
                                "bias of x's last dimension");
  auto y = at::empty(x.sizes(), x.options().dtype(at::kBFloat16));
#ifdef EXPNET_HAVE_SWIN_BF16_KERNELS
  const NormRows op{x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(),
                    static_cast<uint16_t*>(y.data_ptr()), x.size(-1), static_cast<float>(eps)};
  parallel_step(x.numel() / op.c, 64, [&](int64_t first, int64_t last) { layer_norm_rows(op, first, last); });
#endif
  return y;
}

bool bias_fits(const at::Tensor& bias, const at::Tensor& x) {
  return !bias.defined() || (contiguous_cpu(bias, at::kFloat) && bias.dim() == 1 && x.dim() >= 1 &&
                             bias.size(0) == x.size(-1));
}

bool gelu_bf16_applies(const at::Tensor& x, const at::Tensor& bias) {
  return cpu_runs_it() && contiguous_cpu(x, at::kBFloat16) && x.dim() >= 1 && bias_fits(bias, x);
}

void gelu_bf16_(at::Tensor& x, const at::Tensor& bias) {
  if (!gelu_bf16_applies(x, bias))
    throw std::invalid_argument("gelu_bf16_: needs an AVX512_BF16 CPU, a contiguous bfloat16 tensor and a float32 "
                                "bias of its last dimension (or none)");
#ifdef EXPNET_HAVE_SWIN_BF16_KERNELS
  const int64_t c = x.size(-1);
  if (c == 0) return;
  auto* values = static_cast<uint16_t*>(x.data_ptr());
  const float* b = bias.defined() ? bias.data_ptr<float>() : nullptr;
  parallel_step(x.numel() / c, 16, [&](int64_t first, int64_t last) {
    for (int64_t row = first; row < last; ++row) gelu_row(values + row * c, b, c);
  });
#endif
}

bool add_rows_bf16_applies(const at::Tensor& dst, const at::Tensor& rows, const at::Tensor& bias) {
  return cpu_runs_it() && contiguous_cpu(dst, at::kFloat) && contiguous_cpu(rows, at::kBFloat16) && dst.dim() >= 1 &&
         rows.sizes() == dst.sizes() && bias_fits(bias, dst);
}

void add_rows_bf16_(at::Tensor& dst, const at::Tensor& rows, const at::Tensor& bias) {
  if (!add_rows_bf16_applies(dst, rows, bias))
    throw std::invalid_argument("add_rows_bf16_: needs an AVX512_BF16 CPU, contiguous float32 dst, bfloat16 rows of "
                                "its shape and a float32 bias of its last dimension (or none)");
#ifdef EXPNET_HAVE_SWIN_BF16_KERNELS
  const int64_t c = dst.size(-1);
  if (c == 0) return;
  float* out = dst.data_ptr<float>();
  const auto* in = static_cast<const uint16_t*>(rows.data_ptr());
  const float* b = bias.defined() ? bias.data_ptr<float>() : nullptr;
  parallel_step(dst.numel() / c, 16, [&](int64_t first, int64_t last) {
    for (int64_t row = first; row < last; ++row) add_widened(out + row * c, in + row * c, b, out + row * c, c);
  });
#endif
}

bool split_heads_bf16_applies(const at::Tensor& qkv, int64_t heads, const at::Tensor& bias) {
  if (!cpu_runs_it() || !contiguous_cpu(qkv, at::kBFloat16) || qkv.dim() != 3 || heads < 1) return false;
  const int64_t c = qkv.size(2) / 3;
  return qkv.size(2) == 3 * c && c % heads == 0 && c > 0 && bias_fits(bias, qkv);
}

HeadParts split_heads_bf16(const at::Tensor& qkv, int64_t heads, const at::Tensor& bias) {
  if (!split_heads_bf16_applies(qkv, heads, bias))
    throw std::invalid_argument("split_heads_bf16: needs an AVX512_BF16 CPU, contiguous bfloat16 qkv (windows x N x "
                                "3C) with C a multiple of the heads, and a float32 bias of 3C (or none)");
  const int64_t windows = qkv.size(0), n = qkv.size(1), c = qkv.size(2) / 3, d = c / heads;
  HeadParts parts{at::empty({windows, heads, n, d}, qkv.options()), at::empty({windows, heads, d, n}, qkv.options()),
                  at::empty({windows, heads, n, d}, qkv.options())};
#ifdef EXPNET_HAVE_SWIN_BF16_KERNELS
  const auto* in = static_cast<const uint16_t*>(qkv.data_ptr());
  const float* b = bias.defined() ? bias.data_ptr<float>() : nullptr;
  auto* q = static_cast<uint16_t*>(parts.q.data_ptr());
  auto* kt = static_cast<uint16_t*>(parts.k_transposed.data_ptr());
  auto* v = static_cast<uint16_t*>(parts.v.data_ptr());
  // A task per window and head: its blocks are written by one thread alone.
  parallel_step(windows * heads, 1, [&](int64_t first, int64_t last) {
    std::vector<uint16_t> k_row(static_cast<size_t>(d));
    for (int64_t task = first; task < last; ++task) {
      const int64_t w = task / heads, h = task % heads, block = task * n * d;
      const float* bq = b ? b + h * d : nullptr;
      const float* bk = b ? b + c + h * d : nullptr;
      const float* bv = b ? b + 2 * c + h * d : nullptr;
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t* row = in + (w * n + i) * 3 * c + h * d;
        add_bias_bf16(row, bq, q + block + i * d, d);
        add_bias_bf16(row + 2 * c, bv, v + block + i * d, d);
        add_bias_bf16(row + c, bk, k_row.data(), d);
        for (int64_t e = 0; e < d; ++e) kt[block + e * n + i] = k_row[e];
      }
    }
  });
#endif
  return parts;
}

at::Tensor shifted_window_order(int64_t resolution, int64_t window, int64_t shift) {
  if (resolution < 1 || window < 1 || resolution % window != 0 || shift < 0 || shift >= window)
    throw std::invalid_argument("shifted_window_order: the window must divide the resolution and the shift lie in [0, window)");
  auto order = at::empty({resolution * resolution}, at::kLong);
  int64_t* out = order.data_ptr<int64_t>();
  const int64_t per_side = resolution / window;
  int64_t p = 0;
  for (int64_t wy = 0; wy < per_side; ++wy)
    for (int64_t wx = 0; wx < per_side; ++wx)
      for (int64_t iy = 0; iy < window; ++iy)
        for (int64_t ix = 0; ix < window; ++ix)
          out[p++] = (wy * window + iy + shift) % resolution * resolution + (wx * window + ix + shift) % resolution;
  return order;
}

bool window_tokens_apply(const at::Tensor& x, const at::Tensor& order) {
  return cpu_runs_it() && x.defined() && x.device().is_cpu() && x.is_contiguous() && x.dim() == 3 &&
         (x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16) && contiguous_cpu(order, at::kLong) &&
         order.dim() == 1 && order.size(0) == x.size(1);
}

at::Tensor gather_tokens_bf16(const at::Tensor& x, const at::Tensor& order) {
  if (!window_tokens_apply(x, order))
    throw std::invalid_argument("gather_tokens_bf16: needs an AVX512_BF16 CPU, contiguous B x L x C x and L int64 tokens");
  auto rows = at::empty(x.sizes(), x.options().dtype(at::kBFloat16));
#ifdef EXPNET_HAVE_SWIN_BF16_KERNELS
  const int64_t L = x.size(1), C = x.size(2);
  const int64_t* token = order.data_ptr<int64_t>();
  auto* out = static_cast<uint16_t*>(rows.data_ptr());
  const bool from_float = x.scalar_type() == at::kFloat;
  const auto* in = static_cast<const char*>(x.data_ptr());
  parallel_step(x.size(0) * L, 64, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const int64_t source = r / L * L + token[r % L];
      if (from_float) round_row(reinterpret_cast<const float*>(in) + source * C, out + r * C, C);
      else std::memcpy(out + r * C, reinterpret_cast<const uint16_t*>(in) + source * C, C * sizeof(uint16_t));
    }
  });
#endif
  return rows;
}

at::Tensor add_scattered_tokens(const at::Tensor& x, const at::Tensor& rows, const at::Tensor& order,
                                const at::Tensor& bias) {
  if (!window_tokens_apply(x, order) || x.scalar_type() != at::kFloat || !contiguous_cpu(rows, at::kBFloat16) ||
      rows.sizes() != x.sizes() || !bias_fits(bias, x))
    throw std::invalid_argument("add_scattered_tokens: needs an AVX512_BF16 CPU, float32 x and bfloat16 rows of its "
                                "shape (B x L x C), contiguous, L int64 tokens and a float32 bias of C (or none)");
  auto out = at::empty_like(x);
#ifdef EXPNET_HAVE_SWIN_BF16_KERNELS
  const int64_t L = x.size(1), C = x.size(2);
  const int64_t* token = order.data_ptr<int64_t>();
  const float* in = x.data_ptr<float>();
  const auto* windowed = static_cast<const uint16_t*>(rows.data_ptr());
  float* sum = out.data_ptr<float>();
  const float* b = bias.defined() ? bias.data_ptr<float>() : nullptr;
  parallel_step(x.size(0) * L, 64, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const int64_t target = r / L * L + token[r % L];
      add_widened(in + target * C, windowed + r * C, b, sum + target * C, C);
    }
  });
#endif
  return out;
}

}  // namespace expnet
