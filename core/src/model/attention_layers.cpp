// Self-attention of the ablation layer kinds: base Transformer, NSA and GSA.
#include "expnet/model/attention_layers.h"

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace expnet {

void KeyValueCache::reorder(const torch::Tensor& parents) {
  if (!keys.defined()) return;
  keys = keys.index_select(0, parents);
  values = values.index_select(0, parents);
}

torch::Tensor grid_relative_geometry(int64_t side, const torch::TensorOptions& options) {
  if (side <= 0) throw std::invalid_argument("grid_relative_geometry: the grid side must be positive");
  const auto opts = options.dtype(torch::kFloat);
  const auto index = torch::arange(side * side, opts.dtype(torch::kLong));
  const auto centre_x = (index.remainder(side).to(torch::kFloat) + 0.5) / static_cast<double>(side);
  const auto centre_y = (index.div(side, "floor").to(torch::kFloat) + 0.5) / static_cast<double>(side);
  const auto size = torch::full({side * side}, 1.0 / static_cast<double>(side), opts);
  // Query cell i along rows, key cell j along columns.
  const auto dx = (centre_x.unsqueeze(1) - centre_x.unsqueeze(0)).abs() / size.unsqueeze(1);
  const auto dy = (centre_y.unsqueeze(1) - centre_y.unsqueeze(0)).abs() / size.unsqueeze(1);
  const auto dw = size.unsqueeze(1) / size.unsqueeze(0);
  return torch::stack({dx.clamp_min(1e-3).log(), dy.clamp_min(1e-3).log(), dw.log(), dw.log()}, -1);
}

torch::Tensor instance_normalise_queries(const torch::Tensor& q, const torch::Tensor& weight,
                                         const torch::Tensor& bias) {
  const auto mean = q.mean(1, /*keepdim=*/true);
  const auto variance = (q - mean).pow(2).mean(1, /*keepdim=*/true);
  return (q - mean) / (variance + 1e-5).sqrt() * weight + bias;
}

SelfAttentionImpl::SelfAttentionImpl(int64_t d_model_, int64_t heads_, Options options_)
    : d_model(d_model_), heads(heads_), d_k(d_model_ / heads_), options(options_) {
  if (d_model % heads != 0) throw std::invalid_argument("self-attention: d_model must be divisible by num_heads");
  Wq = register_module("Wq", Linear(d_model, d_model));
  Wk = register_module("Wk", Linear(d_model, d_model));
  Wv = register_module("Wv", Linear(d_model, d_model));
  out_linear = register_module("out_linear", Linear(d_model, d_model));
  if (options.normalise_queries) {
    query_norm_weight = register_parameter("query_norm_weight", torch::ones({d_model}));
    query_norm_bias = register_parameter("query_norm_bias", torch::zeros({d_model}));
  }
  if (options.geometry_grid > 0) geometry_embed = register_module("geometry_embed", Linear(4, d_model));
}

torch::Tensor SelfAttentionImpl::split_heads(const torch::Tensor& x) const {
  return x.view({x.size(0), x.size(1), heads, d_k}).transpose(1, 2);
}

torch::Tensor SelfAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& mask, torch::Tensor* weights) {
  const int64_t B = x.size(0), T = x.size(1);
  auto q_full = Wq(x);
  if (options.normalise_queries) q_full = instance_normalise_queries(q_full, query_norm_weight, query_norm_bias);
  const auto q = split_heads(q_full);  // B x H x T x dk
  auto scores = batched_matmul(q, split_heads(Wk(x)).transpose(2, 3), is_training());
  if (options.geometry_grid > 0) {
    const int64_t cells = options.geometry_grid * options.geometry_grid;
    if (T != cells)
      throw std::invalid_argument("geometry-aware self-attention: expected the " + std::to_string(cells) +
                                  " cells of its grid, got a sequence of " + std::to_string(T));
    // G: H x T x T x dk, the same for every image; bias_bhij = q_bhi . G_hij.
    // The geometry is recomputed (N^2 x 4 values, cheap) so forward stays free of shared state.
    const auto geometry = grid_relative_geometry(options.geometry_grid, x.options());
    const auto g = torch::relu(geometry_embed(geometry)).view({T, T, heads, d_k}).permute({2, 0, 1, 3});
    scores = scores + torch::einsum("bhic,hijc->bhij", {q, g});
  }
  scores = scores / std::sqrt(static_cast<double>(d_k));
  // -1e4 as in the cross-attention: a fully hidden row stays finite.
  if (mask.defined()) scores = scores.masked_fill(mask.unsqueeze(1) == 0, -1e4);
  scores = torch::softmax(scores, -1);
  if (weights) *weights = scores;
  const auto out =
      batched_matmul(scores, split_heads(Wv(x)), is_training()).transpose(1, 2).contiguous().view({B, T, d_model});
  return out_linear(out);
}

torch::Tensor SelfAttentionImpl::step(const torch::Tensor& x, KeyValueCache& cache) {
  if (options.normalise_queries || options.geometry_grid > 0)
    throw std::logic_error("self-attention step: NSA and GSA layers attend whole sequences, not steps");
  const int64_t R = x.size(0);
  const auto key = split_heads(Wk(x)), value = split_heads(Wv(x));  // R x H x 1 x dk
  cache.keys = cache.keys.defined() ? torch::cat({cache.keys, key}, 2) : key;
  cache.values = cache.values.defined() ? torch::cat({cache.values, value}, 2) : value;
  const auto logits = torch::matmul(split_heads(Wq(x)), cache.keys.transpose(2, 3));
  const auto scores = torch::softmax(logits / std::sqrt(static_cast<double>(d_k)), -1);
  return out_linear(torch::matmul(scores, cache.values).transpose(1, 2).contiguous().view({R, 1, d_model}));
}

}  // namespace expnet
