// Incremental decoding: the per-step counterpart of ExpansionNetImpl::decode
// (see decoder_state.h for what is cached and why it is exact).
#include "expnet/decode/decoder_state.h"

#include "kernels/cpu/step_kernels.h"
#include "kernels/cpu/few_rows_linear.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace expnet {
namespace {

torch::Tensor normalise_rows(const torch::Tensor& r) { return r / (r.sum(-1, /*keepdim=*/true) + kExpansionEps); }

// Positions the row caches start with: most captions fit, and longer
// decodings double it (a copy of what is there) up to T_max.
constexpr int64_t kInitialPositions = 8;

}  // namespace

DecoderState::DecoderState(ExpansionNet model, const torch::Tensor& enc_out, bool cpu_kernels)
    : model_(std::move(model)),
      cpu_kernels_(cpu_kernels && enc_out.device().is_cpu() && enc_out.scalar_type() == torch::kFloat) {
  if (enc_out.dim() != 3 || enc_out.size(2) != model_->config().d_model)
    throw std::invalid_argument("DecoderState: encoder output must be images x N x d_model");
  c10::InferenceMode inference;  // the caches never need gradients
  images_ = enc_out.size(0);
  row_image_ = torch::arange(images_, enc_out.options().dtype(torch::kLong));
  for (int64_t i = 0; i < images_; ++i) row_image_list_.push_back(i);
  max_positions_ = model_->config().max_seq_len;
  if (cpu_kernels_) lineage_.assign(static_cast<size_t>(images_ * max_positions_), 0);
  for (auto& layer : model_->decoders) {
    LayerCache cache;
    cache.cross_keys_t = layer->mha->project_keys(enc_out).transpose(2, 3).contiguous();
    cache.cross_values = layer->mha->project_values(enc_out).contiguous();
    cache.stacked_inputs = layer->dyn_exp->stacked_inputs();
    layers_.push_back(std::move(cache));
  }
}

torch::Tensor DecoderState::step(const torch::Tensor& tokens) {
  auto hidden = step_hidden(tokens);
  if (!cpu_kernels_) return model_->log_probs(hidden);
  // log_probs()'s values, log_softmax(vocab_linear(hidden)), with the softmax in the
  // decoding threads; under log_probs()'s profiler label so profiles read the same.
  RECORD_USER_SCOPE("expnet::vocab_projection");
  c10::InferenceMode inference;
  const auto logits = model_->vocab_linear(hidden);
  return log_softmax_rows_cpu_applies(logits) ? log_softmax_rows_cpu(logits) : torch::log_softmax(logits, -1);
}

torch::Tensor DecoderState::step_hidden(const torch::Tensor& tokens) {
  if (tokens.dim() != 1 || tokens.size(0) != rows())
    throw std::invalid_argument("DecoderState::step: expected one token per row (" + std::to_string(rows()) + ")");
  if (model_->is_training()) throw std::logic_error("DecoderState: the model must be in eval() mode");
  RECORD_USER_SCOPE("expnet::decoder_step");
  c10::InferenceMode inference;
  auto y = model_->embed_tokens(tokens.view({-1, 1}), length_);  // rows x 1 x d (checks length_ < T_max)
  if (!cpu_kernels_) reserve_positions(length_ + 1);
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
  if (cpu_kernels_) {  // each row's entry for this position is its own row of the new blocks
    for (int64_t r = 0; r < rows(); ++r) lineage_[static_cast<size_t>(r * max_positions_ + length_)] = r;
  }
  ++length_;
  return model_->dec_reduce_norm(y).squeeze(1);
}

void DecoderState::reserve_positions(int64_t positions) {
  // Reordering reallocates the caches with the new row count, so only the
  // number of positions can fall short here.
  if (positions <= capacity_) return;
  const int64_t R = rows();
  const int64_t wanted = capacity_ == 0 ? std::max(kInitialPositions, positions) : std::max(2 * capacity_, positions);
  const int64_t capacity = std::min(max_positions_, wanted);
  for (size_t l = 0; l < layers_.size(); ++l) {
    const auto& dyn = *model_->decoders[l]->dyn_exp;
    const int64_t d = dyn.d_model, NE = dyn.num_exp;
    const auto options = layers_[l].cross_values.options();
    // Uninitialised: a step writes its position's entries (route rows over
    // the whole width) before anything reads them.
    RowCaches grown;
    grown.cond = torch::empty({R, capacity, d}, options);
    grown.keys = torch::empty({R, capacity, d}, options);
    grown.class_a = torch::empty({R, capacity, d}, options);
    grown.class_b = torch::empty({R, capacity, d}, options);
    grown.slot_scores = torch::empty({R, capacity, NE}, options);
    grown.route_a = torch::empty({R, capacity * NE, capacity}, options);
    grown.route_b = torch::empty({R, capacity * NE, capacity}, options);
    auto& old = layers_[l].rows;
    if (old.cond.defined() && length_ > 0) {
      const auto fresh = grown.all(), kept = old.all();
      for (size_t k = 0; k < fresh.size(); ++k) {
        const bool route = fresh[k].second;
        const int64_t used = length_ * (route ? NE : 1);
        auto into = fresh[k].first->narrow(1, 0, used);
        if (route) {
          // The kept route rows end at the old width; keys beyond are later positions: weight 0.
          into.narrow(2, capacity_, capacity - capacity_).zero_();
          into = into.narrow(2, 0, capacity_);
        }
        into.copy_(kept[k].first->narrow(1, 0, used));
      }
    }
    old = std::move(grown);
  }
  capacity_ = capacity;
}

torch::Tensor DecoderState::dynamic_expansion_step(DecoderLayerImpl& layer, LayerCache& cache, const torch::Tensor& x) {
  auto& dyn = *layer.dyn_exp;
  const int64_t R = x.size(0);
  // The new position t: its five linear outputs in one matmul.
  const auto parts = few_rows_linear(x, cache.stacked_inputs.weight, cache.stacked_inputs.bias,
                                     *cache.stacked_inputs.packed).view({R, -1});  // R x 5d
  if (cpu_kernels_ && expansion_step_cpu_applies(parts))
    return expansion_step_cpu(parts, dyn.query_exp_vectors->weight, dyn.bias_exp_vectors->weight, cache.blocks,
                              lineage_.data(), max_positions_)
        .unsqueeze(1);
  return dynamic_expansion_step_tensors(layer, cache.rows, parts);
}

torch::Tensor DecoderState::dynamic_expansion_step_tensors(DecoderLayerImpl& layer, RowCaches& c,
                                                           const torch::Tensor& parts_in) {
  auto& dyn = *layer.dyn_exp;
  const int64_t R = parts_in.size(0), NE = dyn.num_exp, d = dyn.d_model, t = length_, n = t + 1, cap = capacity_;
  const double scale = std::sqrt(static_cast<double>(d));
  const auto& slot_queries = dyn.query_exp_vectors->weight;  // NE x d  (Q)
  const auto& slot_biases = dyn.bias_exp_vectors->weight;    // NE x d  (B)
  const auto parts = parts_in.view({R, 1, 5 * d}).split(d, -1);  // 5 x (R x 1 x d)
  const auto& cond = parts[0];
  const auto& key = parts[1];
  // Slot t of the caches, then views of the n positions fed so far.
  c.cond.narrow(1, t, 1).copy_(cond);
  c.keys.narrow(1, t, 1).copy_(key);
  c.class_a.narrow(1, t, 1).copy_(parts[2]);
  c.class_b.narrow(1, t, 1).copy_(parts[3]);
  const auto conds = c.cond.narrow(1, 0, n), keys = c.keys.narrow(1, 0, n);

  // z[u,e,v] = (Q_e + C_u) . K_v = Q_e . K_v + C_u . K_v. The slot part of a
  // position never changes, so it is cached; the rest are row-wise dot
  // products, written as multiply-and-sum because batched matmuls of one row
  // per beam cost more in dispatch than in arithmetic.
  const auto slot_part = torch::matmul(key, slot_queries.t());                   // R x 1 x NE: Q_e . K_t
  c.slot_scores.narrow(1, t, 1).copy_(slot_part);
  const auto slot_scores = c.slot_scores.narrow(1, 0, n);                        // R x n x NE: Q_e . K_u

  // Forward rows of the new elements (t, e) over keys u <= t, as the full path
  // computes them; stored padded to the capacity (0: positions not yet seen).
  const auto cond_keys = (keys * cond).sum(-1);                                   // R x n: C_t . K_u
  const auto z_new = (slot_scores.transpose(1, 2) + cond_keys.unsqueeze(1)) / scale;  // R x NE x n
  const std::vector<int64_t> pad{0, cap - n};
  c.route_a.narrow(1, t * NE, NE).copy_(torch::constant_pad_nd(normalise_rows(torch::relu(z_new)), pad));
  c.route_b.narrow(1, t * NE, NE).copy_(torch::constant_pad_nd(normalise_rows(torch::relu(-z_new)), pad));

  // Backward row of position t over all elements (u, e), u <= t.
  const auto position_part = (conds * key).sum(-1).unsqueeze(-1);                // R x n x 1: C_u . K_t
  const auto z_back = ((position_part + slot_part) / scale).view({R, n * NE});    // (u, e) position-major
  const auto backward = [&](const torch::Tensor& weights, const torch::Tensor& route, const torch::Tensor& classes) {
    // sum_ue w[u,e] (F[u,e] + b[u,e]) with F[u,e] = route[u,e,:] classes and
    // b[u,e] = B_e + C_u.
    const auto mixed = (weights.unsqueeze(-1) * route.narrow(1, 0, n * NE).narrow(2, 0, n)).sum(1);  // R x n
    const auto grid = weights.view({R, n, NE});
    const auto per_slot = grid.sum(1);                                             // R x NE
    const auto per_position = grid.sum(2);                                         // R x n
    return ((mixed.unsqueeze(-1) * classes.narrow(1, 0, n)).sum(1) + (per_position.unsqueeze(-1) * conds).sum(1) +
            torch::matmul(per_slot, slot_biases))
        .unsqueeze(1);                                                             // R x 1 x d
  };
  const auto out_a = backward(normalise_rows(torch::relu(z_back)), c.route_a, c.class_a);
  const auto out_b = backward(normalise_rows(torch::relu(-z_back)), c.route_b, c.class_b);
  const auto selector = torch::sigmoid(parts[4]);
  return selector * out_a + (1 - selector) * out_b;
}

torch::Tensor DecoderState::cross_attention_step(CrossAttentionImpl& mha, const LayerCache& cache,
                                                 const torch::Tensor& q_in) {
  const int64_t R = q_in.size(0), H = mha.heads, dk = mha.d_k;
  const double scale = std::sqrt(static_cast<double>(dk));
  const auto q = mha.Wq(q_in);  // R x 1 x d
  const auto q_rows = q.view({R, H * dk});
  if (cpu_kernels_ && cross_attention_cpu_applies(q_rows, cache.cross_keys_t, cache.cross_values))
    return mha.out_linear(
        cross_attention_cpu(q_rows, cache.cross_keys_t, cache.cross_values, row_image_list_, 1.0 / scale).unsqueeze(1));
  torch::Tensor out;
  if (rows_per_image_ > 0) {
    // The k rows of an image are k queries against that image's keys.
    const int64_t k = rows_per_image_;
    const auto qh = q.view({images_, k, H, dk}).transpose(1, 2);                  // I x H x k x dk
    auto scores = torch::softmax(torch::matmul(qh, cache.cross_keys_t) / scale, -1);
    out = torch::matmul(scores, cache.cross_values).transpose(1, 2).reshape({R, 1, H * dk});
  } else {
    const auto keys_t = cache.cross_keys_t.index_select(0, row_image_);
    const auto values = cache.cross_values.index_select(0, row_image_);
    const auto qh = q.view({R, 1, H, dk}).transpose(1, 2);                         // R x H x 1 x dk
    auto scores = torch::softmax(torch::matmul(qh, keys_t) / scale, -1);
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
  const int64_t R = idx.numel();
  if (cpu_kernels_) {
    // Rows take their parents' lineage; the blocks stay as they are.
    const auto parents = idx.to(torch::kCPU);
    const int64_t* parent = parents.data_ptr<int64_t>();
    std::vector<int64_t> lineage(static_cast<size_t>(R * max_positions_));
    if (length_ > 0)
      for (int64_t r = 0; r < R; ++r)
        std::copy_n(lineage_.begin() + parent[r] * max_positions_, length_, lineage.begin() + r * max_positions_);
    lineage_ = std::move(lineage);
  } else {
    for (size_t l = 0; l < layers_.size(); ++l) {
      auto& rows = layers_[l].rows;
      if (!rows.cond.defined()) continue;  // no step yet: allocated at the first
      const int64_t NE = model_->decoders[l]->dyn_exp->num_exp;
      for (auto [cache, route] : rows.all()) {
        const int64_t used = length_ * (route ? NE : 1);
        auto sizes = cache->sizes().vec();
        sizes[0] = R;
        auto gathered = torch::empty(sizes, cache->options());  // entries beyond `used` are written before read
        gathered.narrow(1, 0, used).copy_(cache->narrow(1, 0, used).index_select(0, idx));
        *cache = std::move(gathered);
      }
    }
  }
  row_image_ = row_image_.index_select(0, idx);
  const auto images_on_host = row_image_.to(torch::kCPU);
  row_image_list_.assign(images_on_host.data_ptr<int64_t>(), images_on_host.data_ptr<int64_t>() + R);
  // Image-major with a uniform count per image?
  rows_per_image_ = 0;
  if (images_ > 0 && R % images_ == 0) {
    const int64_t k = R / images_;
    const auto expected = torch::arange(images_, row_image_.options()).repeat_interleave(k);
    if (torch::equal(expected, row_image_)) rows_per_image_ = k;
  }
}

}  // namespace expnet
