// Incremental decoding: the per-step counterpart of ExpansionNetImpl::decode
// (see decoder_state.h for what is cached and why it is exact).
#include "expnet/decoder_state.h"

#include <cmath>
#include <stdexcept>

namespace expnet {
namespace {

constexpr double kExpansionEps = 1e-9;  // as in the full path

torch::Tensor normalise_rows(const torch::Tensor& r) { return r / (r.sum(-1, /*keepdim=*/true) + kExpansionEps); }

torch::Tensor append(const torch::Tensor& cache, const torch::Tensor& rows) {
  return cache.defined() ? torch::cat({cache, rows}, 1) : rows;
}

}  // namespace

DecoderState::DecoderState(ExpansionNet model, const torch::Tensor& enc_out) : model_(std::move(model)) {
  if (enc_out.dim() != 3 || enc_out.size(2) != model_->config().d_model)
    throw std::invalid_argument("DecoderState: encoder output must be images x N x d_model");
  images_ = enc_out.size(0);
  row_image_ = torch::arange(images_, enc_out.options().dtype(torch::kLong));
  for (auto& layer : model_->decoders) {
    LayerCache cache;
    cache.cross_keys = layer->mha->project_keys(enc_out).contiguous();
    cache.cross_values = layer->mha->project_values(enc_out).contiguous();
    layers_.push_back(std::move(cache));
  }
}

torch::Tensor DecoderState::step(const torch::Tensor& tokens) { return model_->log_probs(step_hidden(tokens)); }

torch::Tensor DecoderState::step_hidden(const torch::Tensor& tokens) {
  if (tokens.dim() != 1 || tokens.size(0) != rows())
    throw std::invalid_argument("DecoderState::step: expected one token per row (" + std::to_string(rows()) + ")");
  if (model_->is_training()) throw std::logic_error("DecoderState: the model must be in eval() mode");
  auto y = model_->embed_tokens(tokens.view({-1, 1}), length_);  // rows x 1 x d
  std::vector<torch::Tensor> outputs;
  for (size_t l = 0; l < layers_.size(); ++l) {
    auto& layer = *model_->decoders[l];
    y = y + dynamic_expansion_step(layer, layers_[l], layer.norm_1(y));
    y = y + cross_attention_step(*layer.mha, layers_[l], layer.norm_2(y));
    y = y + layer.ff(layer.norm_3(y));
    outputs.push_back(y);
  }
  y = y + model_->dec_reduce_group(torch::cat(outputs, -1));
  ++length_;
  return model_->dec_reduce_norm(y).squeeze(1);
}

torch::Tensor DecoderState::dynamic_expansion_step(DecoderLayerImpl& layer, LayerCache& cache,
                                                   const torch::Tensor& x) {
  auto& dyn = *layer.dyn_exp;
  const double scale = std::sqrt(static_cast<double>(dyn.d_model));
  // The new position t: its NE expanded queries/biases, key and class inputs.
  const auto cond = dyn.cond_embed(x);                                             // R x 1 x d
  const auto query = dyn.query_exp_vectors->weight.unsqueeze(0) + cond;            // R x NE x d
  const auto bias = dyn.bias_exp_vectors->weight.unsqueeze(0) + cond;
  cache.keys = append(cache.keys, dyn.key_linear(x));                              // R x (t+1) x d
  cache.class_a = append(cache.class_a, dyn.class_a_embed(x));
  cache.class_b = append(cache.class_b, dyn.class_b_embed(x));
  cache.queries = append(cache.queries, query);                                    // R x (t+1)*NE x d

  // Forward rows of the new elements (t, e): over keys u <= t.
  const auto z_new = torch::matmul(query, cache.keys.transpose(1, 2)) / scale;     // R x NE x (t+1)
  const auto fa = torch::matmul(normalise_rows(torch::relu(z_new)), cache.class_a) + bias;
  const auto fb = torch::matmul(normalise_rows(torch::relu(-z_new)), cache.class_b) + bias;
  cache.forward_a = append(cache.forward_a, fa);
  cache.forward_b = append(cache.forward_b, fb);

  // Backward row of position t: over all elements (u, e), u <= t, against key t.
  const auto z_back = torch::matmul(cache.keys.narrow(1, cache.keys.size(1) - 1, 1), cache.queries.transpose(1, 2)) /
                      scale;                                                       // R x 1 x (t+1)*NE
  const auto out_a = torch::matmul(normalise_rows(torch::relu(z_back)), cache.forward_a);
  const auto out_b = torch::matmul(normalise_rows(torch::relu(-z_back)), cache.forward_b);
  const auto selector = torch::sigmoid(dyn.selector_embed(x));
  return selector * out_a + (1 - selector) * out_b;
}

torch::Tensor DecoderState::cross_attention_step(CrossAttentionImpl& mha, const LayerCache& cache,
                                                 const torch::Tensor& q_in) {
  const int64_t R = q_in.size(0), H = mha.heads, dk = mha.d_k;
  const double scale = std::sqrt(static_cast<double>(dk));
  const auto q = mha.Wq(q_in);  // R x 1 x d
  torch::Tensor out;
  if (rows_per_image_ > 0) {
    // The k rows of an image are k queries against that image's keys.
    const int64_t k = rows_per_image_;
    const auto qh = q.view({images_, k, H, dk}).transpose(1, 2);                  // I x H x k x dk
    auto scores = torch::softmax(torch::matmul(qh, cache.cross_keys.transpose(2, 3)) / scale, -1);
    out = torch::matmul(scores, cache.cross_values).transpose(1, 2).reshape({R, 1, H * dk});
  } else {
    const auto keys = cache.cross_keys.index_select(0, row_image_);
    const auto values = cache.cross_values.index_select(0, row_image_);
    const auto qh = q.view({R, 1, H, dk}).transpose(1, 2);                         // R x H x 1 x dk
    auto scores = torch::softmax(torch::matmul(qh, keys.transpose(2, 3)) / scale, -1);
    out = torch::matmul(scores, values).transpose(1, 2).reshape({R, 1, H * dk});
  }
  return mha.out_linear(out);
}

void DecoderState::reorder(const torch::Tensor& indices) {
  if (indices.dim() != 1) throw std::invalid_argument("DecoderState::reorder: indices must be a 1-D tensor");
  const auto idx = indices.to(row_image_.device(), torch::kLong);
  if (idx.numel() > 0 && (idx.min().item<int64_t>() < 0 || idx.max().item<int64_t>() >= rows()))
    throw std::invalid_argument("DecoderState::reorder: index outside 0.." + std::to_string(rows() - 1));
  for (auto& cache : layers_)
    for (auto* t : {&cache.queries, &cache.keys, &cache.class_a, &cache.class_b, &cache.forward_a, &cache.forward_b})
      if (t->defined()) *t = t->index_select(0, idx);
  row_image_ = row_image_.index_select(0, idx);
  // Image-major with a uniform count per image?
  const int64_t R = row_image_.size(0);
  rows_per_image_ = 0;
  if (images_ > 0 && R % images_ == 0) {
    const int64_t k = R / images_;
    const auto expected = torch::arange(images_, row_image_.options()).repeat_interleave(k);
    if (torch::equal(expected, row_image_)) rows_per_image_ = k;
  }
}

}  // namespace expnet
