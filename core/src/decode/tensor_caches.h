// The decoding step in LibTorch operations, on any device: Dynamic Expansion
// caches kept row-major per layer (grown by doubling, gathered on reordering).
#pragma once

#include <torch/torch.h>

#include <memory>

#include "decode/step_caches.h"

namespace expnet {

std::unique_ptr<StepCaches> make_tensor_caches(const ExpansionNetImpl& model, const torch::TensorOptions& options);

// The step's cross-attention in LibTorch operations (the fused path falls
// back to it where its kernel does not apply).
torch::Tensor cross_attention_tensors(CrossAttentionImpl& mha, const CrossAttentionCache& cache,
                                      const torch::Tensor& q_in, const RowImages& rows);

}  // namespace expnet
