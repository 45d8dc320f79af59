// Incremental decoding: the per-step counterpart of ExpansionNetImpl::decode.
// The layer loop and the rows' bookkeeping are here; the caches of each
// device path are in step_caches.h's implementations.
#include "expnet/decode/decoder_state.h"

#include <torch/torch.h>

#include <stdexcept>
#include <utility>

#include "decode/fused_cpu_caches.h"
#include "decode/step_caches.h"
#include "decode/tensor_caches.h"

namespace expnet {

DecoderState::DecoderState(ExpansionNet model, const torch::Tensor& enc_out, bool cpu_kernels)
    : model_(std::move(model)) {
  if (enc_out.dim() != 3 || enc_out.size(2) != model_->config().d_model)
    throw std::invalid_argument("DecoderState: encoder output must be images x N x d_model");
  c10::InferenceMode inference;  // the caches never need gradients
  rows_.images = enc_out.size(0);
  rows_.row_image = torch::arange(rows_.images, enc_out.options().dtype(torch::kLong));
  for (int64_t i = 0; i < rows_.images; ++i) rows_.on_host.push_back(i);
  for (auto& layer : model_->decoders) {
    CrossAttentionCache cache;
    cache.keys_t = layer->mha->project_keys(enc_out).transpose(2, 3).contiguous();
    cache.values = layer->mha->project_values(enc_out).contiguous();
    if (layer->dyn_exp) cache.stacked_inputs = layer->dyn_exp->stacked_inputs();
    layers_.push_back(std::move(cache));
  }
  self_attention_.resize(layers_.size());
  const bool fused = cpu_kernels && enc_out.device().is_cpu() && enc_out.scalar_type() == torch::kFloat;
  caches_ = fused ? make_fused_cpu_caches(layers_.size(), rows_.images, model_->config().max_seq_len)
                  : make_tensor_caches(*model_, enc_out.options());
}

DecoderState::~DecoderState() = default;
DecoderState::DecoderState(DecoderState&&) noexcept = default;
DecoderState& DecoderState::operator=(DecoderState&&) noexcept = default;

torch::Tensor DecoderState::step(const torch::Tensor& tokens) { return caches_->log_probs(*model_, step_hidden(tokens)); }

torch::Tensor DecoderState::step_hidden(const torch::Tensor& tokens) {
  if (tokens.dim() != 1 || tokens.size(0) != rows())
    throw std::invalid_argument("DecoderState::step: expected one token per row (" + std::to_string(rows()) + ")");
  if (model_->is_training()) throw std::logic_error("DecoderState: the model must be in eval() mode");
  RECORD_USER_SCOPE("expnet::decoder_step");
  c10::InferenceMode inference;
  auto y = model_->embed_tokens(tokens.view({-1, 1}), length_);  // rows x 1 x d (checks length_ < T_max)
  caches_->begin_step(rows(), length_);
  std::vector<torch::Tensor> outputs;
  for (size_t l = 0; l < layers_.size(); ++l) {
    auto& layer = *model_->decoders[l];
    auto& cache = layers_[l];
    if (layer.self_att) {
      RECORD_USER_SCOPE("expnet::decoder_step.self_attention");
      y = y + layer.self_att->step(caches_->norm(*layer.norm_1, y), self_attention_[l]);
    } else {
      RECORD_USER_SCOPE("expnet::decoder_step.dynamic_expansion");
      // The new position's five linear outputs in one matmul.
      const auto x = caches_->norm(*layer.norm_1, y);
      const auto parts = cache.stacked_inputs.step(x).view({x.size(0), -1});  // rows x 5d
      y = y + caches_->expansion(l, *layer.dyn_exp, parts, length_);
    }
    {
      RECORD_USER_SCOPE("expnet::decoder_step.cross_attention");
      y = y + caches_->cross_attention(*layer.mha, cache, caches_->norm(*layer.norm_2, y), rows_);
    }
    {
      RECORD_USER_SCOPE("expnet::decoder_step.feed_forward");
      y = y + layer.ff(caches_->norm(*layer.norm_3, y));
    }
    outputs.push_back(y);
  }
  y = y + model_->dec_reduce_group(torch::cat(outputs, -1));
  caches_->end_step(rows(), length_);
  ++length_;
  return caches_->norm(*model_->dec_reduce_norm, y).squeeze(1);
}

void DecoderState::reorder(const torch::Tensor& indices) {
  RECORD_USER_SCOPE("expnet::decoder_state.reorder");
  c10::InferenceMode inference;
  if (indices.dim() != 1) throw std::invalid_argument("DecoderState::reorder: indices must be a 1-D tensor");
  const auto idx = indices.to(rows_.row_image.device(), torch::kLong);
  if (idx.numel() > 0 && (idx.min().item<int64_t>() < 0 || idx.max().item<int64_t>() >= rows()))
    throw std::invalid_argument("DecoderState::reorder: index outside 0.." + std::to_string(rows() - 1));
  const int64_t R = idx.numel();
  caches_->reorder(idx, length_);
  for (auto& cache : self_attention_) cache.reorder(idx);
  rows_.row_image = rows_.row_image.index_select(0, idx);
  const auto images_on_host = rows_.row_image.to(torch::kCPU);
  rows_.on_host.assign(images_on_host.data_ptr<int64_t>(), images_on_host.data_ptr<int64_t>() + R);
  // Image-major with a uniform count per image?
  rows_.rows_per_image = 0;
  if (rows_.images > 0 && R % rows_.images == 0) {
    const int64_t k = R / rows_.images;
    const auto expected = torch::arange(rows_.images, rows_.row_image.options()).repeat_interleave(k);
    if (torch::equal(expected, rows_.row_image)) rows_.rows_per_image = k;
  }
}

}  // namespace expnet
