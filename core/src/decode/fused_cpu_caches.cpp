// The decoding step on the CPU for a float32 model (see fused_cpu_caches.h):
// the kernels of core/src/kernels/cpu/step_kernels.h over per-position blocks.
#include "decode/fused_cpu_caches.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>
#include <vector>

#include "decode/tensor_caches.h"
#include "kernels/cpu/step_kernels.h"

namespace expnet {
namespace {

class FusedCpuCaches final : public StepCaches {
 public:
  FusedCpuCaches(size_t layers, int64_t images, int64_t max_positions)
      : blocks_(layers), max_positions_(max_positions), lineage_(static_cast<size_t>(images * max_positions), 0) {}

  void begin_step(int64_t, int64_t) override {}

  torch::Tensor expansion(size_t layer, DynamicExpansionImpl& dyn, const torch::Tensor& parts, int64_t) override {
    if (!expansion_step_cpu_applies(parts))
      throw std::logic_error("DecoderState: the fused CPU step needs contiguous CPU float32 expansion inputs");
    return expansion_step_cpu(parts, dyn.query_exp_vectors->weight, dyn.bias_exp_vectors->weight, blocks_[layer],
                              lineage_.data(), max_positions_)
        .unsqueeze(1);
  }

  torch::Tensor cross_attention(CrossAttentionImpl& mha, const CrossAttentionCache& cache, const torch::Tensor& q_in,
                                const RowImages& rows) override {
    const int64_t R = q_in.size(0), H = mha.heads, dk = mha.d_k;
    const auto q_rows = mha.Wq(q_in).view({R, H * dk});
    if (!cross_attention_cpu_applies(q_rows, cache.keys_t, cache.values))
      return cross_attention_tensors(mha, cache, q_in, rows);
    const double scale = std::sqrt(static_cast<double>(dk));
    return mha.out_linear(cross_attention_cpu(q_rows, cache.keys_t, cache.values, rows.on_host, 1.0 / scale).unsqueeze(1));
  }

  torch::Tensor norm(LayerNormImpl& layer, const torch::Tensor& x) override { return step_layer_norm(layer, x, true); }

  torch::Tensor log_probs(ExpansionNetImpl& model, const torch::Tensor& hidden) override {
    // log_probs()'s values, log_softmax(vocab_linear(hidden)), with the softmax in the
    // decoding threads; under log_probs()'s profiler label so profiles read the same.
    RECORD_USER_SCOPE("expnet::vocab_projection");
    c10::InferenceMode inference;
    const auto logits = model.vocab_linear(hidden);
    return log_softmax_rows_cpu_applies(logits) ? log_softmax_rows_cpu(logits) : torch::log_softmax(logits, -1);
  }

  // Each row's entry for position t is its own row of the new blocks.
  void end_step(int64_t rows, int64_t t) override {
    for (int64_t r = 0; r < rows; ++r) lineage_[static_cast<size_t>(r * max_positions_ + t)] = r;
  }

  // Rows take their parents' lineage; the blocks stay as they are.
  void reorder(const torch::Tensor& parents_in, int64_t length) override {
    const auto parents = parents_in.to(torch::kCPU);
    const int64_t R = parents.numel();
    const int64_t* parent = parents.data_ptr<int64_t>();
    std::vector<int64_t> lineage(static_cast<size_t>(R * max_positions_));
    if (length > 0)
      for (int64_t r = 0; r < R; ++r)
        std::copy_n(lineage_.begin() + parent[r] * max_positions_, length, lineage.begin() + r * max_positions_);
    lineage_ = std::move(lineage);
  }

 private:
  std::vector<std::vector<ExpansionBlock>> blocks_;  // per decoder layer, a block per position
  int64_t max_positions_ = 0;                        // T_max: the lineage stride
  std::vector<int64_t> lineage_;                     // rows x T_max: the block row of each position fed
};

}  // namespace

std::unique_ptr<StepCaches> make_fused_cpu_caches(size_t layers, int64_t images, int64_t max_positions) {
  return std::make_unique<FusedCpuCaches>(layers, images, max_positions);
}

torch::Tensor step_layer_norm(LayerNormImpl& layer, const torch::Tensor& x, bool cpu_kernels) {
  if (cpu_kernels && layer_norm_rows_cpu_applies(x, layer.weight, layer.bias))
    return layer_norm_rows_cpu(x, layer.weight, layer.bias, layer.eps);
  return layer.forward(x);
}

}  // namespace expnet
