// The full-recompute step decoder: every step runs the decoder over the whole
// prefix and projects the encoder output to cross-attention keys/values
// again, exactly what the reference's beam search does. It is the path the
// parity fixtures verify, and the baseline of `expnet bench decode`.
#include <torch/torch.h>

#include "decode/step_decoders.h"
#include "expnet/decode/decoder_state.h"
#include "expnet/model/expansion_net.h"

namespace expnet {
namespace {

class FullRecomputeDecoder final : public StepDecoder {
 public:
  FullRecomputeDecoder(ExpansionNetImpl& model, at::Tensor encoded) : model_(model), encoded_(std::move(encoded)) {}

  at::Tensor step(const at::Tensor& tokens) override {
    auto column = tokens.to(encoded_.device()).to(torch::kLong).reshape({-1, 1});
    prefix_ = prefix_.defined() ? torch::cat({prefix_, column}, 1) : column;
    auto mask = causal_self_mask(prefix_, /*pad_id=*/-1);
    auto log_probs = model_.decode(encoded_, prefix_, mask);
    return log_probs.select(1, log_probs.size(1) - 1);
  }

  void select(const at::Tensor& index) override {
    auto i = index.to(encoded_.device()).to(torch::kLong);
    encoded_ = encoded_.index_select(0, i);
    if (prefix_.defined()) prefix_ = prefix_.index_select(0, i);
  }

 private:
  ExpansionNetImpl& model_;
  at::Tensor encoded_;  // rows x N x d
  at::Tensor prefix_;   // rows x t, SOS first
};

// Adapts the model's DecoderState (cached cross-attention keys/values and
// dynamic-expansion caches) to the search strategies' interface.
class IncrementalDecoder final : public StepDecoder {
 public:
  IncrementalDecoder(const ExpansionNet& model, const at::Tensor& encoded)
      : state_(model, encoded), device_(encoded.device()) {}
  at::Tensor step(const at::Tensor& tokens) override { return state_.step(tokens.to(device_).to(torch::kLong)); }
  void select(const at::Tensor& index) override { state_.reorder(index.to(device_).to(torch::kLong)); }

 private:
  DecoderState state_;
  torch::Device device_;
};

}  // namespace

std::unique_ptr<StepDecoder> make_incremental_decoder(const ExpansionNet& model, const at::Tensor& encoded) {
  return std::make_unique<IncrementalDecoder>(model, encoded);
}

std::unique_ptr<StepDecoder> make_full_decoder(ExpansionNetImpl& model, const at::Tensor& encoded) {
  return std::make_unique<FullRecomputeDecoder>(model, encoded);
}

}  // namespace expnet
