// ExpansionNet v2 captioner: static/dynamic expansion, cross-attention,
// pre-LN encoder and decoder layers, reduce layers, embeddings and the whole
// model. Operation order follows the reference so parity holds to ~1e-6.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <stdexcept>

#include "expnet/model/expansion_net.h"
#include "expnet/model/pnaic.h"
#include "kernels/cpu/step_kernels.h"  // kExpansionEps
#include "kernels/cpu/dropout_training.h"
#include "kernels/cpu/few_rows_linear.h"

namespace expnet {
namespace {

namespace F = torch::nn::functional;

torch::Tensor apply_dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0) return x;
  if (fused_training_kernels() && dropout_training_applies(x) && p < 1) return dropout_training(x, p);
  return F::dropout(x, F::DropoutFuncOptions().p(p).training(true));
}

std::string shape_text(const torch::Tensor& t) {
  std::string out;
  for (const auto s : t.sizes()) out += (out.empty() ? "" : "x") + std::to_string(s);
  return out.empty() ? "scalar" : out;
}

}  // namespace

// ---------------------------------------------------------------- feed-forward

FeedForwardImpl::FeedForwardImpl(int64_t d_model, int64_t d_ff) {
  linear_1 = register_module("linear_1", Linear(d_model, d_ff));
  linear_2 = register_module("linear_2", Linear(d_ff, d_model));
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
  return linear_2(apply_dropout(torch::relu(linear_1(x)), this->dropout, is_training()));
}

// ---------------------------------------------------------------- static expansion

StaticExpansionImpl::StaticExpansionImpl(int64_t d_model_, std::vector<int64_t> groups_)
    : d_model(d_model_), groups(std::move(groups_)) {
  int64_t total = 0;
  for (const auto g : groups) total += g;
  query_exp_vectors = register_module("query_exp_vectors", Embedding(total, d_model));
  bias_exp_vectors = register_module("bias_exp_vectors", Embedding(total, d_model));
  key_embed = register_module("key_embed", Linear(d_model, d_model));
  class_a_embed = register_module("class_a_embed", Linear(d_model, d_model));
  class_b_embed = register_module("class_b_embed", Linear(d_model, d_model));
  selector_embed = register_module("selector_embed", Linear(d_model, d_model));
}

torch::Tensor StaticExpansionImpl::forward(const torch::Tensor& x, ExpansionTrace* trace) {
  const bool training = is_training();
  const auto& query = query_exp_vectors->weight;  // NE x d
  const auto& bias = bias_exp_vectors->weight;
  // Z: NE x L length transformation matrix per image.
  auto z = batched_matmul(query, key_embed(x).transpose(-1, -2), training) / std::sqrt(static_cast<double>(d_model));
  z = apply_dropout(z, this->dropout, training);

  // Forward: every slot gathers the sequence (rows normalised over L).
  const auto forward_a = normalise_expansion_rows(torch::relu(z)), forward_b = normalise_expansion_rows(torch::relu(-z));
  auto class_a = batched_matmul(forward_a, class_a_embed(x), training) + bias;
  auto class_b = batched_matmul(forward_b, class_b_embed(x), training) + bias;
  class_a = apply_dropout(class_a, this->dropout, training);
  class_b = apply_dropout(class_b, this->dropout, training);

  // Backward: every position gathers the slots, normalised within each group.
  const auto zt = z.transpose(-2, -1);
  const auto a_bw = torch::relu(zt), b_bw = torch::relu(-zt);
  std::vector<torch::Tensor> a_parts, b_parts;
  int64_t from = 0;
  for (const auto g : groups) {
    a_parts.push_back(normalise_expansion_rows(a_bw.narrow(-1, from, g)));
    b_parts.push_back(normalise_expansion_rows(b_bw.narrow(-1, from, g)));
    from += g;
  }
  const double num_groups = static_cast<double>(groups.size());
  const auto backward_a = torch::cat(a_parts, -1), backward_b = torch::cat(b_parts, -1);
  if (trace) *trace = {z, forward_a, forward_b, backward_a, backward_b};
  auto out_a = batched_matmul(backward_a, class_a, training) / num_groups;
  auto out_b = batched_matmul(backward_b, class_b, training) / num_groups;
  out_a = apply_dropout(out_a, this->dropout, training);
  out_b = apply_dropout(out_b, this->dropout, training);

  const auto selector = torch::sigmoid(selector_embed(x));
  return selector * out_a + (1 - selector) * out_b;
}


// ---------------------------------------------------------------- dynamic expansion

DynamicExpansionImpl::DynamicExpansionImpl(int64_t d_model_, int64_t num_exp_) : d_model(d_model_), num_exp(num_exp_) {
  cond_embed = register_module("cond_embed", Linear(d_model, d_model));
  query_exp_vectors = register_module("query_exp_vectors", Embedding(num_exp, d_model));
  bias_exp_vectors = register_module("bias_exp_vectors", Embedding(num_exp, d_model));
  key_linear = register_module("key_linear", Linear(d_model, d_model));
  class_a_embed = register_module("class_a_embed", Linear(d_model, d_model));
  class_b_embed = register_module("class_b_embed", Linear(d_model, d_model));
  selector_embed = register_module("selector_embed", Linear(d_model, d_model));
}

DynamicExpansionImpl::StackedInputs DynamicExpansionImpl::stacked_inputs() {
  const std::vector<Linear> parts{cond_embed, key_linear, class_a_embed, class_b_embed, selector_embed};
  std::vector<std::pair<const void*, int64_t>> sources;
  for (const auto& part : parts)
    for (const auto& t : {part->weight, part->bias}) sources.emplace_back(t.data_ptr(), t.is_inference() ? 0 : t._version());
  const bool bf16 = std::all_of(parts.begin(), parts.end(), [](const Linear& part) { return part->bf16_current(); });
  std::lock_guard<std::mutex> lock(stacked_mutex_);
  if (!stacked_.weight.defined() || sources != stacked_sources_ || bf16 != stacked_bf16_) {
    c10::InferenceMode inference;
    std::vector<torch::Tensor> weights, biases;
    for (const auto& part : parts) {
      weights.push_back(part->weight);
      biases.push_back(part->bias);
    }
    stacked_.weight = torch::cat(weights);
    stacked_.bias = torch::cat(biases);
    // The same rounding as each part's own copy (LinearImpl::set_precision).
    stacked_.weight_bf16 = bf16 ? stacked_.weight.to(torch::kBFloat16).contiguous() : torch::Tensor();
    if (!stacked_.packed) stacked_.packed = std::make_shared<PackedWeightCache>();
    stacked_sources_ = std::move(sources);
    stacked_bf16_ = bf16;
  }
  return stacked_;
}

torch::Tensor DynamicExpansionImpl::StackedInputs::step(const torch::Tensor& x) const {
  if (weight_bf16.defined() && few_rows_linear_bf16_applies(x, weight_bf16))
    return few_rows_linear_bf16(x, weight_bf16, bias);
  return few_rows_linear(x, weight, bias, *packed);
}

torch::Tensor DynamicExpansionImpl::forward(const torch::Tensor& x, const torch::Tensor& mask, ExpansionTrace* trace) {
  const bool training = is_training();
  const int64_t B = x.size(0), T = x.size(1), NE = num_exp, d = d_model;
  auto visible = mask.to(torch::kBool);
  if (visible.dim() == 2) visible = visible.unsqueeze(0).expand({B, T, T});
  if (visible.size(0) != B || visible.size(1) != T || visible.size(2) != T)
    throw std::invalid_argument("decoder self-mask must be B x T x T = " + std::to_string(B) + "x" + std::to_string(T) +
                                "x" + std::to_string(T) + ", got " + shape_text(mask));

  // Expanded elements (t, e), position-major: T*NE queries and biases.
  const auto cond = cond_embed(x).view({B, T, 1, d});
  const auto query = (query_exp_vectors->weight.view({1, 1, NE, d}) + cond).view({B, T * NE, d});
  const auto bias = (bias_exp_vectors->weight.view({1, 1, NE, d}) + cond).view({B, T * NE, d});

  auto z = batched_matmul(query, key_linear(x).transpose(-1, -2), training) / std::sqrt(static_cast<double>(d));
  z = apply_dropout(z, this->dropout, training);  // B x T*NE x T

  // Forward: element (t, e) sees the positions visible from t.
  const auto hidden_1 = visible.logical_not().unsqueeze(2).expand({B, T, NE, T}).reshape({B, T * NE, T});
  const auto forward_a = normalise_expansion_rows(torch::relu(z).masked_fill(hidden_1, 0.0));
  const auto forward_b = normalise_expansion_rows(torch::relu(-z).masked_fill(hidden_1, 0.0));
  auto class_a = batched_matmul(forward_a, class_a_embed(x), training);
  auto class_b = batched_matmul(forward_b, class_b_embed(x), training);
  class_a = apply_dropout(class_a, this->dropout, training);
  class_b = apply_dropout(class_b, this->dropout, training);

  // Backward: position t sees the elements of the positions visible from t.
  const auto hidden_2 = visible.logical_not().unsqueeze(-1).expand({B, T, T, NE}).reshape({B, T, T * NE});
  const auto zt = z.transpose(-2, -1);
  const auto backward_a = normalise_expansion_rows(torch::relu(zt).masked_fill(hidden_2, 0.0));
  const auto backward_b = normalise_expansion_rows(torch::relu(-zt).masked_fill(hidden_2, 0.0));
  if (trace) *trace = {z.masked_fill(hidden_1, 0.0), forward_a, forward_b, backward_a, backward_b};
  auto out_a = batched_matmul(backward_a, class_a + bias, training);
  auto out_b = batched_matmul(backward_b, class_b + bias, training);
  out_a = apply_dropout(out_a, this->dropout, training);
  out_b = apply_dropout(out_b, this->dropout, training);

  const auto selector = torch::sigmoid(selector_embed(x));
  return selector * out_a + (1 - selector) * out_b;
}

// ---------------------------------------------------------------- cross-attention

CrossAttentionImpl::CrossAttentionImpl(int64_t d_model_, int64_t heads_)
    : d_model(d_model_), heads(heads_), d_k(d_model_ / heads_) {
  if (d_model % heads != 0) throw std::invalid_argument("cross-attention: d_model must be divisible by num_heads");
  Wq = register_module("Wq", Linear(d_model, d_k * heads));
  Wk = register_module("Wk", Linear(d_model, d_k * heads));
  Wv = register_module("Wv", Linear(d_model, d_k * heads));
  out_linear = register_module("out_linear", Linear(d_model, d_model));
}

torch::Tensor CrossAttentionImpl::split_heads(const torch::Tensor& x) {
  return x.view({x.size(0), x.size(1), heads, d_k}).transpose(1, 2);
}

torch::Tensor CrossAttentionImpl::attend(const torch::Tensor& q, const torch::Tensor& keys,
                                         const torch::Tensor& values, const torch::Tensor& mask,
                                         torch::Tensor* weights) {
  const int64_t B = q.size(0), T = q.size(1);
  auto scores =
      batched_matmul(split_heads(Wq(q)), keys.transpose(3, 2), is_training()) / std::sqrt(static_cast<double>(d_k));
  // The reference fills with -1e4, not -inf: a fully masked row (padding) is uniform, not NaN.
  if (mask.defined()) scores = scores.masked_fill(mask.unsqueeze(1) == 0, -1e4);
  scores = torch::softmax(scores, -1);
  if (weights) *weights = scores;
  const auto out =
      batched_matmul(scores, values, is_training()).permute({0, 2, 1, 3}).contiguous().view({B, T, d_model});
  return out_linear(out);
}

// ---------------------------------------------------------------- encoder layer

EncoderLayerImpl::EncoderLayerImpl(const ModelConfig& config) {
  const int64_t d = config.d_model;
  norm_1 = register_module("norm_1", LayerNorm(d));
  norm_2 = register_module("norm_2", LayerNorm(d));
  switch (config.encoder_layer) {
    case EncoderLayerKind::StaticExpansion:
      stc_exp = register_module("stc_exp", StaticExpansion(d, config.num_exp_enc_list));
      break;
    case EncoderLayerKind::DynamicExpansion:  // validate(): one coefficient
      dyn_exp = register_module("dyn_exp", DynamicExpansion(d, config.num_exp_enc_list.front()));
      break;
    case EncoderLayerKind::SelfAttention:
      self_att = register_module("self_att", SelfAttention(d, config.num_heads, SelfAttentionImpl::Options{}));
      break;
    case EncoderLayerKind::NgSan: {
      const int64_t side = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(config.feature_tokens()))));
      self_att =
          register_module("self_att", SelfAttention(d, config.num_heads, SelfAttentionImpl::Options{true, side}));
      break;
    }
  }
  ff = register_module("ff", FeedForward(d, config.ff));
}

torch::Tensor EncoderLayerImpl::forward(const torch::Tensor& x, ExpansionTrace* trace) {
  const bool training = is_training();
  const auto in = norm_1(x);
  torch::Tensor mixed;
  if (stc_exp) {
    mixed = stc_exp->forward(in, trace);
  } else if (dyn_exp) {
    const auto all_visible = torch::ones({x.size(1), x.size(1)}, x.options().dtype(torch::kBool));
    mixed = dyn_exp->forward(in, all_visible, trace);
  } else {
    if (trace) *trace = {};
    mixed = self_att->forward(in, {}, trace ? &trace->self_attention : nullptr);
  }
  auto out = x + apply_dropout(mixed, this->dropout, training);
  return out + apply_dropout(ff(norm_2(out)), this->dropout, training);
}

// ---------------------------------------------------------------- decoder layer

DecoderLayerImpl::DecoderLayerImpl(const ModelConfig& config) {
  const int64_t d = config.d_model;
  norm_1 = register_module("norm_1", LayerNorm(d));
  norm_2 = register_module("norm_2", LayerNorm(d));
  norm_3 = register_module("norm_3", LayerNorm(d));
  mha = register_module("mha", CrossAttention(d, config.num_heads));
  if (config.decoder_layer == DecoderLayerKind::DynamicExpansion)
    dyn_exp = register_module("dyn_exp", DynamicExpansion(d, config.num_exp_dec));
  else
    self_att = register_module("self_att", SelfAttention(d, config.num_heads, SelfAttentionImpl::Options{}));
  ff = register_module("ff", FeedForward(d, config.ff));
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& cross_keys,
                                        const torch::Tensor& cross_values, const torch::Tensor& self_mask,
                                        const torch::Tensor& cross_mask, DecoderLayerTrace* trace) {
  torch::Tensor mixed;
  if (dyn_exp) {
    mixed = dyn_exp->forward(norm_1(x), self_mask, trace ? &trace->expansion : nullptr);
  } else {
    const int64_t B = x.size(0), T = x.size(1);
    const auto mask = self_mask.dim() == 2 ? self_mask.unsqueeze(0).expand({B, T, T}) : self_mask;
    if (mask.dim() != 3 || mask.size(0) != B || mask.size(1) != T || mask.size(2) != T)
      throw std::invalid_argument("decoder self-mask must be B x T x T = " + std::to_string(B) + "x" +
                                  std::to_string(T) + "x" + std::to_string(T) + ", got " + shape_text(self_mask));
    mixed = self_att->forward(norm_1(x), mask, trace ? &trace->expansion.self_attention : nullptr);
  }
  auto out = x + apply_dropout(mixed, this->dropout, is_training());
  return cross_and_ff(out, cross_keys, cross_values, cross_mask, trace ? &trace->cross_attention : nullptr);
}

torch::Tensor DecoderLayerImpl::cross_and_ff(torch::Tensor x, const torch::Tensor& cross_keys,
                                             const torch::Tensor& cross_values, const torch::Tensor& cross_mask,
                                             torch::Tensor* cross_weights) {
  const bool training = is_training();
  x = x + apply_dropout(mha->attend(norm_2(x), cross_keys, cross_values, cross_mask, cross_weights), this->dropout,
                        training);
  return x + apply_dropout(ff(norm_3(x)), this->dropout, training);
}

EmbeddingLayerImpl::EmbeddingLayerImpl(int64_t vocab_size, int64_t d_model_) : d_model(d_model_) {
  embed = register_module("embed", Embedding(vocab_size, d_model));
}

torch::Tensor EmbeddingLayerImpl::forward(const torch::Tensor& tokens) {
  // Dropout before the scaling, as the reference does.
  return apply_dropout(embed(tokens), this->dropout, is_training()) * std::sqrt(static_cast<double>(d_model));
}

// ---------------------------------------------------------------- whole model

ExpansionNetImpl::ExpansionNetImpl(const ModelConfig& config, int64_t vocab_size, bool reference_init)
    : config_(config), vocab_size_(vocab_size) {
  config_.validate();
  if (vocab_size <= 0) throw std::invalid_argument("model: vocabulary size must be positive");
  const int64_t d = config_.d_model;
  swin_transf = register_module("swin_transf", SwinTransformer(config_));
  auto enc_list = register_module("encoders", torch::nn::ModuleList());
  for (int64_t i = 0; i < config_.N_enc; ++i) {
    EncoderLayer layer(config_);
    enc_list->push_back(layer);
    encoders.push_back(layer);
  }
  auto dec_list = register_module("decoders", torch::nn::ModuleList());
  for (int64_t i = 0; i < config_.N_dec; ++i) {
    DecoderLayer layer(config_);
    dec_list->push_back(layer);
    decoders.push_back(layer);
  }
  input_linear = register_module("input_linear", Linear(config_.final_swin_dim, d));
  vocab_linear = register_module("vocab_linear", Linear(d, vocab_size));
  out_embedder = register_module("out_embedder", EmbeddingLayer(vocab_size, d));
  pos_encoder = register_module("pos_encoder", Embedding(config_.max_seq_len, d));
  enc_reduce_group = register_module("enc_reduce_group", Linear(d * config_.N_enc, d));
  enc_reduce_norm = register_module("enc_reduce_norm", LayerNorm(d));
  dec_reduce_group = register_module("dec_reduce_group", Linear(d * config_.N_dec, d));
  dec_reduce_norm = register_module("dec_reduce_norm", LayerNorm(d));
  if (config_.is_pnaic()) pnaic_group_embed = register_module("pnaic_group_embed", Embedding(config_.pnaic_groups, d));
  if (reference_init) reset_parameters();
}

torch::Tensor ExpansionNetImpl::backbone(const torch::Tensor& images) {
  RECORD_USER_SCOPE("expnet::backbone");
  return swin_transf(images);
}

torch::Tensor ExpansionNetImpl::encode(const torch::Tensor& features, std::vector<ExpansionTrace>* traces) {
  if (features.dim() != 3 || features.size(2) != config_.final_swin_dim)
    throw std::invalid_argument("encode: expected features B x N x " + std::to_string(config_.final_swin_dim) +
                                ", got " + shape_text(features));
  const bool training = is_training();
  RECORD_USER_SCOPE("expnet::encoder");
  auto x = apply_dropout(input_linear(features), dropout_.enc_input, training);
  std::vector<torch::Tensor> outputs;
  if (traces) traces->assign(encoders.size(), {});
  for (size_t i = 0; i < encoders.size(); ++i) {
    x = encoders[i]->forward(x, traces ? &(*traces)[i] : nullptr);
    outputs.push_back(x);
  }
  x = x + apply_dropout(enc_reduce_group(torch::cat(outputs, -1)), dropout_.other, training);
  return enc_reduce_norm(x);
}

torch::Tensor ExpansionNetImpl::embed_tokens(const torch::Tensor& tokens, int64_t first_position) {
  if (tokens.dim() != 2) throw std::invalid_argument("decode: expected tokens B x T, got " + shape_text(tokens));
  const int64_t T = tokens.size(1);
  if (first_position < 0 || first_position + T > config_.max_seq_len)
    throw std::invalid_argument("decode: positions " + std::to_string(first_position) + ".." +
                                std::to_string(first_position + T - 1) + " exceed max_seq_len " +
                                std::to_string(config_.max_seq_len));
  const auto positions = torch::arange(first_position, first_position + T, tokens.options().dtype(torch::kLong));
  return embed_checked(tokens, positions, {});
}

torch::Tensor ExpansionNetImpl::embed_tokens_at(const torch::Tensor& tokens, const torch::Tensor& positions,
                                                const torch::Tensor& groups) {
  if (tokens.dim() != 2) throw std::invalid_argument("decode: expected tokens B x T, got " + shape_text(tokens));
  if (positions.numel() > 0 && positions.max().item<int64_t>() >= config_.max_seq_len)
    throw std::invalid_argument("decode: position " + std::to_string(positions.max().item<int64_t>()) +
                                " exceeds max_seq_len " + std::to_string(config_.max_seq_len));
  return embed_checked(tokens, positions, groups);
}

torch::Tensor ExpansionNetImpl::embed_checked(const torch::Tensor& tokens, const torch::Tensor& positions,
                                              const torch::Tensor& groups) {
  if (tokens.numel() > 0) {
    const int64_t lo = tokens.min().item<int64_t>(), hi = tokens.max().item<int64_t>();
    if (lo < 0 || hi >= vocab_size_)
      throw std::invalid_argument("decode: token id " + std::to_string(lo < 0 ? lo : hi) +
                                  " is outside the vocabulary (size " + std::to_string(vocab_size_) + ")");
  }
  auto y = out_embedder(tokens) + pos_encoder(positions);
  if (groups.defined() != config_.is_pnaic())
    throw std::logic_error(config_.is_pnaic() ? "decode: a PNAIC model needs each position's group"
                                              : "decode: an AIC model has no groups");
  if (groups.defined()) y = y + pnaic_group_embed(groups);
  return y;
}

torch::Tensor ExpansionNetImpl::decode_hidden(const torch::Tensor& enc_out, const torch::Tensor& tokens,
                                              const torch::Tensor& self_mask, const torch::Tensor& cross_mask,
                                              std::vector<DecoderLayerTrace>* traces) {
  if (enc_out.dim() != 3 || enc_out.size(2) != config_.d_model || enc_out.size(0) != tokens.size(0))
    throw std::invalid_argument("decode: encoder output " + shape_text(enc_out) + " does not match " +
                                std::to_string(tokens.size(0)) + " sequences of d_model " +
                                std::to_string(config_.d_model));
  RECORD_USER_SCOPE("expnet::decoder");
  const bool training = is_training();
  torch::Tensor y;
  if (config_.is_pnaic()) {
    const auto layout = group_layout(tokens.size(1), config_.pnaic_groups, tokens.device());
    y = embed_tokens_at(tokens, layout.positions, layout.groups);
  } else {
    y = embed_tokens(tokens);
  }
  std::vector<torch::Tensor> outputs;
  if (traces) traces->assign(decoders.size(), {});
  for (size_t i = 0; i < decoders.size(); ++i) {
    auto& layer = decoders[i];
    y = layer->forward(y, layer->mha->project_keys(enc_out), layer->mha->project_values(enc_out), self_mask, cross_mask,
                       traces ? &(*traces)[i] : nullptr);
    outputs.push_back(y);
  }
  y = y + apply_dropout(dec_reduce_group(torch::cat(outputs, -1)), dropout_.other, training);
  return dec_reduce_norm(y);
}

torch::Tensor ExpansionNetImpl::log_probs(const torch::Tensor& hidden) {
  RECORD_USER_SCOPE("expnet::vocab_projection");
  // Under bf16 autocast the logits are bfloat16; the log-probabilities (the loss's and
  // SCST's sampling distribution) are taken and kept in float32.
  return torch::log_softmax(vocab_linear(hidden), -1, torch::kFloat);
}

torch::Tensor ExpansionNetImpl::decode(const torch::Tensor& enc_out, const torch::Tensor& tokens,
                                       const torch::Tensor& self_mask, const torch::Tensor& cross_mask) {
  return log_probs(decode_hidden(enc_out, tokens, self_mask, cross_mask));
}

void ExpansionNetImpl::reset_parameters() {
  torch::NoGradGuard no_grad;
  // 1. torch.nn defaults where nothing later overwrites them: Linear biases
  //    U(+-1/sqrt(fan_in)) (LayerNorms are built as 1/0, Conv2d is LibTorch's).
  for (const auto& module : modules(/*include_self=*/false))
    if (auto* linear = module->as<LinearImpl>())
      if (linear->bias.defined()) {
        const double bound = 1.0 / std::sqrt(static_cast<double>(linear->in_features));
        linear->bias.uniform_(-bound, bound);
      }
  // 2. Swin's own init: Linear biases 0, LayerNorms 1/0. Its truncated-normal
  //    weights are overwritten by step 3, so they are not drawn.
  for (const auto& module : swin_transf->modules(/*include_self=*/false)) {
    if (auto* linear = module->as<LinearImpl>()) {
      if (linear->bias.defined()) linear->bias.zero_();
    } else if (auto* norm = module->as<LayerNormImpl>()) {
      norm->weight.fill_(1.0);
      norm->bias.zero_();
    }
  }
  // 3. The captioner's Xavier-uniform pass over every tensor with more than
  //    one dimension, the backbone's included (as the reference does).
  for (auto& p : parameters())
    if (p.dim() > 1) torch::nn::init::xavier_uniform_(p);
}

void ExpansionNetImpl::set_precision(Precision precision) {
  std::vector<std::shared_ptr<torch::nn::Module>> parts{swin_transf.ptr(), input_linear.ptr(), enc_reduce_group.ptr()};
  for (const auto& layer : encoders) parts.push_back(layer.ptr());
  std::set<const LinearImpl*> image_side;
  for (const auto& part : parts)
    for (auto& module : part->modules(/*include_self=*/true))
      if (auto* linear = module->as<LinearImpl>()) {
        linear->set_precision(precision);
        image_side.insert(linear);
      }
  // The decoder's Linears (and the output projection): bf16 or float32.
  const Precision decoder = precision == Precision::BF16 ? Precision::BF16 : Precision::FP32;
  for (auto& module : modules(/*include_self=*/false))
    if (auto* linear = module->as<LinearImpl>(); linear && !image_side.count(linear)) linear->set_precision(decoder);
}

void ExpansionNetImpl::set_dropout(const DropoutRates& rates) {
  dropout_ = rates;
  swin_transf->set_dropout(rates);
  for (auto& layer : encoders) {
    layer->dropout = rates.enc;
    if (layer->stc_exp) layer->stc_exp->dropout = rates.enc;
    if (layer->dyn_exp) layer->dyn_exp->dropout = rates.enc;
    layer->ff->dropout = rates.enc;
  }
  for (auto& layer : decoders) {
    layer->dropout = rates.dec;
    if (layer->dyn_exp) layer->dyn_exp->dropout = rates.dec;
    layer->ff->dropout = rates.dec;
  }
  out_embedder->dropout = rates.dec_input;
}

// ---------------------------------------------------------------- masks

torch::Tensor causal_self_mask(const torch::Tensor& tokens, int64_t pad_id) {
  const int64_t B = tokens.size(0), T = tokens.size(1);
  auto visible = torch::ones({T, T}, tokens.options().dtype(torch::kBool)).tril().unsqueeze(0).expand({B, T, T});
  if (pad_id < 0) return visible.contiguous();
  const auto real = tokens != pad_id;
  return visible.logical_and(real.unsqueeze(1)).logical_and(real.unsqueeze(2));
}

torch::Tensor cross_attention_mask(const torch::Tensor& tokens, int64_t pad_id, int64_t enc_len) {
  const int64_t B = tokens.size(0), T = tokens.size(1);
  if (pad_id < 0) return torch::ones({B, T, enc_len}, tokens.options().dtype(torch::kBool));
  return (tokens != pad_id).unsqueeze(2).expand({B, T, enc_len}).contiguous();
}


}  // namespace expnet
