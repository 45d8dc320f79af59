// Incremental decoding: the per-step counterpart of ExpansionNetImpl::decode
// (see decoder_state.h for what is cached and why it is exact).
#include "expnet/decoder_state.h"

#include "model/few_rows_linear.h"

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
  c10::InferenceMode inference;  // the caches never need gradients
  images_ = enc_out.size(0);
  row_image_ = torch::arange(images_, enc_out.options().dtype(torch::kLong));
  max_positions_ = model_->config().max_seq_len;
  for (auto& layer : model_->decoders) {
    LayerCache cache;
    cache.cross_keys = layer->mha->project_keys(enc_out).contiguous();
    cache.cross_values = layer->mha->project_values(enc_out).contiguous();
    const auto& dyn = *layer->dyn_exp;
    cache.fused_weight = torch::cat({dyn.cond_embed->weight, dyn.key_linear->weight, dyn.class_a_embed->weight,
                                     dyn.class_b_embed->weight, dyn.selector_embed->weight});
    cache.fused_bias = torch::cat({dyn.cond_embed->bias, dyn.key_linear->bias, dyn.class_a_embed->bias,
                                   dyn.class_b_embed->bias, dyn.selector_embed->bias});
    layers_.push_back(std::move(cache));
  }
}

torch::Tensor DecoderState::step(const torch::Tensor& tokens) { return model_->log_probs(step_hidden(tokens)); }

torch::Tensor DecoderState::step_hidden(const torch::Tensor& tokens) {
  if (tokens.dim() != 1 || tokens.size(0) != rows())
    throw std::invalid_argument("DecoderState::step: expected one token per row (" + std::to_string(rows()) + ")");
  if (model_->is_training()) throw std::logic_error("DecoderState: the model must be in eval() mode");
  RECORD_USER_SCOPE("expnet::decoder_step");
  c10::InferenceMode inference;
  auto y = model_->embed_tokens(tokens.view({-1, 1}), length_);  // rows x 1 x d
  std::vector<torch::Tensor> outputs;
  for (size_t l = 0; l < layers_.size(); ++l) {
    auto& layer = *model_->decoders[l];
    {
      RECORD_USER_SCOPE("expnet::decoder_step.dynamic_expansion");
      y = y + dynamic_expansion_step(layer, layers_[l], layer.norm_1(y));
    }
    {
      RECORD_USER_SCOPE("expnet::decoder_step.cross_attention");
      y = y + cross_attention_step(*layer.mha, layers_[l], layer.norm_2(y));
    }
    {
      RECORD_USER_SCOPE("expnet::decoder_step.feed_forward");
      y = y + layer.ff(layer.norm_3(y));
    }
    outputs.push_back(y);
  }
  y = y + model_->dec_reduce_group(torch::cat(outputs, -1));
  ++length_;
  return model_->dec_reduce_norm(y).squeeze(1);
}

torch::Tensor DecoderState::dynamic_expansion_step(DecoderLayerImpl& layer, LayerCache& cache,
                                                   const torch::Tensor& x) {
  auto& dyn = *layer.dyn_exp;
  const int64_t R = x.size(0), NE = dyn.num_exp, d = dyn.d_model;
  const double scale = std::sqrt(static_cast<double>(d));
  const auto& slot_queries = dyn.query_exp_vectors->weight;  // NE x d  (Q)
  const auto& slot_biases = dyn.bias_exp_vectors->weight;    // NE x d  (B)

  // The new position t: its five linear outputs in one matmul.
  const auto parts = few_rows_linear(x, cache.fused_weight, cache.fused_bias).split(d, -1);  // 5 x (R x 1 x d)
  const auto& cond = parts[0];
  const auto& key = parts[1];
  cache.cond = append(cache.cond, cond);                   // R x n x d, n = t+1
  cache.keys = append(cache.keys, key);
  cache.class_a = append(cache.class_a, parts[2]);
  cache.class_b = append(cache.class_b, parts[3]);
  const int64_t n = cache.keys.size(1);

  // z[u,e,v] = (Q_e + C_u) . K_v = Q_e . K_v + C_u . K_v. The slot part of a
  // position never changes, so it is cached; the rest are row-wise dot
  // products, written as multiply-and-sum because batched matmuls of one row
  // per beam cost more in dispatch than in arithmetic.
  const auto slot_part = torch::matmul(key, slot_queries.t());                   // R x 1 x NE: Q_e . K_t
  cache.slot_scores = append(cache.slot_scores, slot_part);                       // R x n x NE: Q_e . K_u

  // Forward rows of the new elements (t, e) over keys u <= t, as the full path
  // computes them; stored padded to T_max (zeros: positions not yet seen).
  const auto cond_keys = (cache.keys * cond).sum(-1);                             // R x n: C_t . K_u
  const auto z_new = (cache.slot_scores.transpose(1, 2) + cond_keys.unsqueeze(1)) / scale;  // R x NE x n
  const std::vector<int64_t> pad{0, max_positions_ - n};
  cache.route_a = append(cache.route_a, torch::constant_pad_nd(normalise_rows(torch::relu(z_new)), pad));
  cache.route_b = append(cache.route_b, torch::constant_pad_nd(normalise_rows(torch::relu(-z_new)), pad));

  // Backward row of position t over all elements (u, e), u <= t.
  const auto position_part = (cache.cond * key).sum(-1).unsqueeze(-1);           // R x n x 1: C_u . K_t
  const auto z_back = ((position_part + slot_part) / scale).view({R, n * NE});    // (u, e) position-major
  const auto backward = [&](const torch::Tensor& weights, const torch::Tensor& route, const torch::Tensor& classes) {
    // sum_ue w[u,e] (F[u,e] + b[u,e]) with F[u,e] = route[u,e,:] classes and
    // b[u,e] = B_e + C_u.
    const auto mixed = (weights.unsqueeze(-1) * route.narrow(2, 0, n)).sum(1);   // R x n
    const auto grid = weights.view({R, n, NE});
    const auto per_slot = grid.sum(1);                                             // R x NE
    const auto per_position = grid.sum(2);                                         // R x n
    return ((mixed.unsqueeze(-1) * classes).sum(1) + (per_position.unsqueeze(-1) * cache.cond).sum(1) +
            torch::matmul(per_slot, slot_biases))
        .unsqueeze(1);                                                             // R x 1 x d
  };
  const auto out_a = backward(normalise_rows(torch::relu(z_back)), cache.route_a, cache.class_a);
  const auto out_b = backward(normalise_rows(torch::relu(-z_back)), cache.route_b, cache.class_b);
  const auto selector = torch::sigmoid(parts[4]);
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
  RECORD_USER_SCOPE("expnet::decoder_state.reorder");
  c10::InferenceMode inference;
  if (indices.dim() != 1) throw std::invalid_argument("DecoderState::reorder: indices must be a 1-D tensor");
  const auto idx = indices.to(row_image_.device(), torch::kLong);
  if (idx.numel() > 0 && (idx.min().item<int64_t>() < 0 || idx.max().item<int64_t>() >= rows()))
    throw std::invalid_argument("DecoderState::reorder: index outside 0.." + std::to_string(rows() - 1));
  for (auto& cache : layers_)
    for (auto* t : {&cache.cond, &cache.keys, &cache.class_a, &cache.class_b, &cache.route_a, &cache.route_b,
                    &cache.slot_scores})
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
