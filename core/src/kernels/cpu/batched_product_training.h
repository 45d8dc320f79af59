// Batched products of small matrices while training on the CPU in float32: the
// expansion layers' and the captioner's attention products (32 to 128 matrices of a
// few dozen rows each). LibTorch 1.13's CPU bmm runs them one after the other on one
// thread, a select and an addmm per matrix, and backward adds two such loops;
// here forward and backward are each one pass of per-matrix tasks over the intra-op
// (OpenMP) threads, reading the operands through their strides (transposed views
// included). docs/performance.md, "A training step by operator".
#pragma once

#include <ATen/core/Tensor.h>

namespace expnet {

// True when batched_product_training can run: a and b CPU float32 tensors of the
// same rank (at least 3) with equal leading (batch) sizes, a ... x M x K and
// b ... x K x N, none of them empty.
bool batched_product_training_applies(const at::Tensor& a, const at::Tensor& b);

// a . b as torch::matmul gives it (... x M x N, contiguous), differentiable in both
// (double backward is not supported).
at::Tensor batched_product_training(const at::Tensor& a, const at::Tensor& b);

}  // namespace expnet
