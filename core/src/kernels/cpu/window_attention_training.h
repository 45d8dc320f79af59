// Swin's window attention while training on the CPU in float32, fused:
// softmax(q k^T * scale + bias[h] + mask[b % M]) v for every window b and head h,
// its forward and its backward each one pass of (window, head) tasks over the
// intra-op (OpenMP) threads, reading q, k and v where the qkv product put them and
// writing the gradient of that product whole. LibTorch's batched products run
// each window's small GEMM in turn on one thread (a select and an addmm per
// window), and backward adds two more per product: docs/performance.md,
// "A training step by operator".
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace expnet {

// True when window_attention_training can run: qkv a CPU float32 B x N x 3C
// tensor (q, k, v, each head's D = C / heads columns in turn, as Swin's qkv
// Linear gives them), bias heads x N x N float32, mask undefined or
// M x N x N float32 with B a multiple of M.
bool window_attention_training_applies(const at::Tensor& qkv, const at::Tensor& bias, const at::Tensor& mask,
                                       int64_t heads);

// The heads' outputs, B x N x C (head h in columns h*D .. h*D+D-1), as
// softmax(q k^T * scale + bias + mask) v; differentiable in qkv and bias (the
// mask is a constant, double backward is not supported).
at::Tensor window_attention_training(const at::Tensor& qkv, const at::Tensor& bias, const at::Tensor& mask,
                                     int64_t heads, double scale);

}  // namespace expnet
