// The decoding step on the CPU for a float32 model: Dynamic Expansion caches
// kept as a block per position with a lineage per row (beam reordering
// permutes integers), and the fused kernels of core/src/kernels/cpu/.
#pragma once

#include <cstdint>
#include <memory>

#include "decode/step_caches.h"

namespace expnet {

std::unique_ptr<StepCaches> make_fused_cpu_caches(size_t layers, int64_t images, int64_t max_positions);

// A LayerNorm of a step's few rows: with `cpu_kernels`, on the calling thread
// where layer_norm_rows_cpu applies (LibTorch's opens a parallel region, which
// for 5 rows of 512 took most of the norm's time: docs/performance.md); else
// the module's own.
torch::Tensor step_layer_norm(LayerNormImpl& layer, const torch::Tensor& x, bool cpu_kernels);

}  // namespace expnet
