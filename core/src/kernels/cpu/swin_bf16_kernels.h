// The Swin backbone's own CPU kernels in bf16 (--precision bf16), for the
// passes between its bf16 matrix products that LibTorch 1.13 takes slowly or
// in several steps (docs/performance.md, "bfloat16"). They need AVX512_BF16,
// and split their rows over the decoding threads (step_threads.h): this file is
// built without OpenMP, so at::parallel_for here would run on one thread.
// - window softmax: the scores' relative-position bias, shift mask and softmax
//   in one pass over bfloat16 scores, where LibTorch takes three (two bf16 adds,
//   each rounding, and a softmax that widens every row): about a third of the
//   time (docs/performance.md, "Figures behind choices in the code").
// - LayerNorm to bf16: the float32 residual stream normalised straight into the
//   bfloat16 rows the next product reads, instead of a float32 LayerNorm and a
//   conversion.
// - GELU in place on the MLP's bfloat16 hidden rows, where LibTorch's bf16
//   GELU widens, calls its erf and narrows, slowly (docs/performance.md, "Figures behind choices in the code").
// - q, k (transposed) and v split into heads per window and head, where
//   LibTorch's batched products copied k and v themselves and q was scaled
//   into a copy of its own (the scale now joins the softmax).
// - Windows as a token order: the shift (roll), window partition and reverse
//   and the residual add, which LibTorch does in up to six passes of strided
//   copies (as slow per element in bf16 as in float32), as one gather of whole
//   token rows and one scattered add.
#pragma once

#include <ATen/core/Tensor.h>

namespace expnet {

// True when window_softmax_bf16_ can run: a CPU with AVX512_BF16, contiguous
// CPU bfloat16 scores (windows x heads x N x N), a contiguous float32 bias
// (heads x N x N) and, if defined, a contiguous float32 mask (mask windows x N
// x N) whose window count divides the scores'.
bool window_softmax_bf16_applies(const at::Tensor& scores, const at::Tensor& bias, const at::Tensor& mask);

// scores[w, h, i, :] = softmax(scale scores[w, h, i, :] + bias[h, i, :] + mask[w % W, i, :])
// in place, in float32 from the bfloat16 scores, rounded once to bfloat16 (to
// nearest even). mask may be undefined. std::invalid_argument when it does not apply.
void window_softmax_bf16_(at::Tensor& scores, const at::Tensor& bias, const at::Tensor& mask, double scale = 1.0);

// True when split_heads_bf16 can run: an AVX512_BF16 CPU, contiguous CPU
// bfloat16 qkv (windows x N x 3C) with C a multiple of heads, a bias undefined
// or float32 of 3C.
bool split_heads_bf16_applies(const at::Tensor& qkv, int64_t heads, const at::Tensor& bias = {});

// q, k transposed and v of every head, contiguous (windows x heads x N x d,
// windows x heads x d x N, windows x heads x N x d), from the qkv product's rows
// (windows x N x 3C: q, k, v, each heads x d) plus the product's bias (may be
// undefined), as the attention products take them.
struct HeadParts {
  at::Tensor q, k_transposed, v;
};
HeadParts split_heads_bf16(const at::Tensor& qkv, int64_t heads, const at::Tensor& bias = {});

// True when layer_norm_to_bf16 can run: an AVX512_BF16 CPU, contiguous CPU
// float32 x whose last dimension is that of the float32 weight and bias.
bool layer_norm_to_bf16_applies(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);

// torch::layer_norm(x, {C}, weight, bias, eps) over the last dimension
// (statistics and normalisation in float32), rounded once to bfloat16.
// std::invalid_argument when it does not apply.
at::Tensor layer_norm_to_bf16(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps);

// True when gelu_bf16_ can run: an AVX512_BF16 CPU, a contiguous CPU bfloat16
// x and a bias that is undefined or a contiguous float32 vector of x's last dimension.
bool gelu_bf16_applies(const at::Tensor& x, const at::Tensor& bias = {});

// x = GELU(x + bias) in place, GELU(v) = 0.5 v (1 + erf(v / sqrt 2)) (the
// exact GELU, as nn.GELU()), computed in float32 with erf within 2e-7
// (Abramowitz and Stegun 7.1.26) and rounded to bfloat16; bias may be
// undefined. std::invalid_argument when it does not apply.
void gelu_bf16_(at::Tensor& x, const at::Tensor& bias = {});

// True when add_rows_bf16_ can run: an AVX512_BF16 CPU, contiguous CPU float32
// dst, bfloat16 rows of its shape, bias undefined or float32 of the last dimension.
bool add_rows_bf16_applies(const at::Tensor& dst, const at::Tensor& rows, const at::Tensor& bias);

// dst += rows + bias (rows widened to float32; bias may be undefined).
void add_rows_bf16_(at::Tensor& dst, const at::Tensor& rows, const at::Tensor& bias);

// The token order of a block's windows: entry p is the token (row of the
// resolution x resolution grid) at windowed position p once the grid is rolled
// by -shift in both directions and partitioned into window x window windows, in
// window_partition's order (windows row by row, then positions row by row).
at::Tensor shifted_window_order(int64_t resolution, int64_t window, int64_t shift);

// True when gather_tokens_bf16 and add_scattered_tokens can run: an AVX512_BF16
// CPU, contiguous CPU x (B x L x C, float32), an int64 order of L tokens.
bool window_tokens_apply(const at::Tensor& x, const at::Tensor& order);

// rows[b, p, :] = x[b, order[p], :] as bfloat16 (x float32 or bfloat16).
at::Tensor gather_tokens_bf16(const at::Tensor& x, const at::Tensor& order);

// x + y with y's rows in window order: out[b, order[p], :] = x[b, order[p], :] +
// rows[b, p, :] + bias (rows bfloat16; x, out and the bias, which may be
// undefined, float32).
at::Tensor add_scattered_tokens(const at::Tensor& x, const at::Tensor& rows, const at::Tensor& order,
                                const at::Tensor& bias = {});

}  // namespace expnet
