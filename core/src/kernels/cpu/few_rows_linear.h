// y = x W^T + b for inputs of few rows (a decoding step: one row per beam,
// per image), where BLAS spends more on packing the weights than on the
// arithmetic: up to kFewRowsLimit rows a step is bound by reading W, from
// there up to kBlockedRowsLimit by the arithmetic.
#pragma once

#include <ATen/core/Tensor.h>

#include "kernels/cpu/packed_weight_cache.h"

namespace expnet {

// Rows of x up to which few_rows_linear streams W itself, split over the
// decoding threads (one beam-search step of one image).
inline constexpr int64_t kFewRowsLimit = 8;
// With AVX2 or AVX-512, rows up to which its packed (AVX-512) or blocked (AVX2)
// kernel takes a step of several images; above it, BLAS.
inline constexpr int64_t kBlockedRowsLimit = 64;

// True when few_rows_linear would take its own path for these operands:
// inference (no autograd), CPU float32, contiguous weight, and at most
// kFewRowsLimit rows (kBlockedRowsLimit with AVX2 or AVX-512).
bool few_rows_linear_applies(const at::Tensor& x, const at::Tensor& weight);

// torch::linear(x, weight, bias) (bias may be undefined). For the shapes of
// few_rows_linear_applies it reads each weight row once and dots it with every
// input row (AVX-512, AVX2/FMA or portable code, the best the CPU has), or,
// above kFewRowsLimit rows with AVX-512, packs the weight for this call alone
// (the overload with a PackedWeightCache keeps it); otherwise it is
// torch::linear itself. Sums differ from BLAS only in
// rounding order (about 1e-6 relative).
at::Tensor few_rows_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);

// few_rows_linear, which with AVX-512 takes steps of more than kFewRowsLimit
// rows (up to kBlockedRowsLimit) through the packed weight of `cache`
// (docs/performance.md, "Decoding kernels").
at::Tensor few_rows_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                           PackedWeightCache& cache);

// The kernels, ordered; few_rows_linear uses the best one this CPU runs.
// avx512_bf16 (AVX512_BF16) differs from avx512 only for bf16 weights.
enum class FewRowsIsa { portable = 0, avx2 = 1, avx512 = 2, avx512_bf16 = 3 };
FewRowsIsa best_few_rows_isa();

// bf16 decoding (--precision bf16): the same row kernels reading a bfloat16
// copy of the weight, half the bytes of a step that is bound by reading them.
// With avx512_bf16, x is rounded to bfloat16 too and vdpbf16ps sums the
// products in float32, so y is the float32 product of the rounded x and
// weights; with the other kernels each weight is widened to float32 in
// registers and x stays float32, so y is the product with the rounded weights.
// The bias, the sums and y are float32 in both.
// Applies to float32 x of 1 to kFewRowsLimit rows and a contiguous bfloat16
// weight on the CPU without autograd; few_rows_linear_bf16 refuses others
// (std::invalid_argument), and a CPU without `isa`.
bool few_rows_linear_bf16_applies(const at::Tensor& x, const at::Tensor& weight_bf16);
at::Tensor few_rows_linear_bf16(const at::Tensor& x, const at::Tensor& weight_bf16, const at::Tensor& bias,
                                FewRowsIsa isa = best_few_rows_isa());
// The same with a given kernel family (tests compare every family the CPU
// runs); std::invalid_argument when the CPU lacks it.
at::Tensor few_rows_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, FewRowsIsa isa);

}  // namespace expnet
