// The decoding step on the CPU for a float32 model: Dynamic Expansion caches
// kept as a block per position with a lineage per row (beam reordering
// permutes integers), and the fused kernels of core/src/kernels/cpu/.
#pragma once

#include <cstdint>
#include <memory>

#include "decode/step_caches.h"

namespace expnet {

std::unique_ptr<StepCaches> make_fused_cpu_caches(size_t layers, int64_t images, int64_t max_positions);

}  // namespace expnet
