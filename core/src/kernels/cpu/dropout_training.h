// Dropout while training on the CPU in float32, fused: one pass draws each
// element's keep bit from a counter-based hash of (seed, element index) and
// scales the kept values, over the intra-op (OpenMP) threads; backward applies
// the saved mask. LibTorch 1.13's CPU bernoulli_ (without MKL) draws element by
// element on one thread under the generator's lock, and a second operator
// multiplies: docs/performance.md, "A training step by operator". The seed is
// drawn from LibTorch's default CPU generator, so torch::manual_seed and a
// resumed run's saved generator state give the same masks.
#pragma once

#include <ATen/core/Tensor.h>

namespace expnet {

// True when dropout_training can run: a defined CPU float32 tensor.
bool dropout_training_applies(const at::Tensor& x);

// x with each element kept with probability 1 - p and scaled by 1 / (1 - p),
// or zeroed; differentiable in x. p in [0, 1): p = 0 returns x.
at::Tensor dropout_training(const at::Tensor& x, double p);

}  // namespace expnet
