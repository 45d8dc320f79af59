// The device-dependent half of a DecoderState: the Dynamic Expansion caches
// and the pieces of a step whose fastest form depends on where the model runs.
// One implementation per path, each made by its own file: fused_cpu_caches.h
// (CPU float32) and tensor_caches.h (LibTorch operations, any device).
// DecoderState owns the rest (cross-attention keys/values, rows' images, the
// layer loop).
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "expnet/decode/decoder_state.h"

namespace expnet {

class StepCaches {
 public:
  virtual ~StepCaches() = default;
  // Before the layers of a step feed position t to `rows` rows.
  virtual void begin_step(int64_t rows, int64_t t) = 0;
  // Dynamic Expansion of position t in decoder layer `layer`: parts (rows x 5d:
  // cond, key, class_a, class_b, selector logits of x_t) -> rows x 1 x d.
  virtual torch::Tensor expansion(size_t layer, DynamicExpansionImpl& dyn, const torch::Tensor& parts, int64_t t) = 0;
  // Cross-attention of the step's queries (rows x 1 x d, before Wq).
  virtual torch::Tensor cross_attention(CrossAttentionImpl& mha, const CrossAttentionCache& cache,
                                        const torch::Tensor& q_in, const RowImages& rows) = 0;
  // A LayerNorm of the step's rows.
  virtual torch::Tensor norm(LayerNormImpl& layer, const torch::Tensor& x) = 0;
  // The next token's log-probabilities from the decoder output (rows x d_model).
  virtual torch::Tensor log_probs(ExpansionNetImpl& model, const torch::Tensor& hidden) = 0;
  // After the step fed position t.
  virtual void end_step(int64_t rows, int64_t t) = 0;
  // New row i continues old row parents[i] (int64, on the model's device);
  // `length` positions have been fed.
  virtual void reorder(const torch::Tensor& parents, int64_t length) = 0;
};

}  // namespace expnet
