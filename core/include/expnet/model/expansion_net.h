// ExpansionNet v2 (End_ExpansionNet_v2 of the authors' code) as LibTorch modules.
// Every parameter and buffer carries the reference state_dict name and shape, so
// reference checkpoints load by name (see docs/model.md and
// docs/expansionnet-v2.md for the math). The forward pass is split so
// decoding can reuse the pieces:
//   backbone(images)                 B x 3 x S x S   -> B x N x final_swin_dim
//   encode(features)                 B x N x final   -> B x N x d_model
//   decode(enc, tokens, self_mask)   B x T token ids -> B x T x V log-probs
// The decoder's self-mask is an argument (causal_self_mask builds the reference
// one) so other visibility patterns (e.g. PNAIC groups) plug in unchanged.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>
#include "expnet/model/attention_layers.h"
#include "expnet/model/model_config.h"
#include "expnet/model/layers.h"
#include "expnet/model/model_trace.h"
#include "expnet/model/swin.h"

namespace expnet {

// ExpansionTrace and DecoderLayerTrace (optional trace outputs of the
// forward passes below) are defined in expnet/model/model_trace.h.

class FeedForwardImpl : public torch::nn::Module {
 public:
  FeedForwardImpl(int64_t d_model, int64_t d_ff);
  torch::Tensor forward(const torch::Tensor& x);
  double dropout = 0;
  Linear linear_1{nullptr}, linear_2{nullptr};
};
TORCH_MODULE(FeedForward);

// Static Expansion (encoder): NE = sum(groups) learned slots.
class StaticExpansionImpl : public torch::nn::Module {
 public:
  StaticExpansionImpl(int64_t d_model, std::vector<int64_t> groups);
  torch::Tensor forward(const torch::Tensor& x, ExpansionTrace* trace = nullptr);  // B x L x d
  int64_t d_model;
  std::vector<int64_t> groups;
  double dropout = 0;
  Embedding query_exp_vectors{nullptr}, bias_exp_vectors{nullptr};
  Linear key_embed{nullptr}, class_a_embed{nullptr}, class_b_embed{nullptr}, selector_embed{nullptr};
};
TORCH_MODULE(StaticExpansion);


// Dynamic Expansion (decoder): NE slots per position, causal through `mask`
// (B x T x T, nonzero = visible).
class DynamicExpansionImpl : public torch::nn::Module {
 public:
  DynamicExpansionImpl(int64_t d_model, int64_t num_exp);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask, ExpansionTrace* trace = nullptr);
  int64_t d_model, num_exp;
  double dropout = 0;
  Linear cond_embed{nullptr};
  Embedding query_exp_vectors{nullptr}, bias_exp_vectors{nullptr};
  Linear key_linear{nullptr}, class_a_embed{nullptr}, class_b_embed{nullptr}, selector_embed{nullptr};

  // The five linears that read x (cond, key, class_a, class_b, selector)
  // stacked into one (5d x d, 5d): a decoding step multiplies its new position
  // by all five at once. Made on first use and kept across decodings (with
  // the packed form of the weight); remade when one of the five changes.
  struct StackedInputs {
    torch::Tensor weight, bias;
    torch::Tensor weight_bf16;  // while the five Linears are in bf16 (set_precision), else undefined
    std::shared_ptr<PackedWeightCache> packed;
    // A decoding step's rows (float32) through all five: rows x 5d, in the bf16
    // row kernels when weight_bf16 is defined and they apply.
    torch::Tensor step(const torch::Tensor& x) const;
  };
  StackedInputs stacked_inputs();

 private:
  std::mutex stacked_mutex_;
  StackedInputs stacked_;
  std::vector<std::pair<const void*, int64_t>> stacked_sources_;  // data and version of each stacked tensor
  bool stacked_bf16_ = false;                                       // whether stacked_ has its bf16 copy
};
TORCH_MODULE(DynamicExpansion);

// A pre-LN encoder layer whose sequence mixing is config.encoder_layer's kind:
// exactly one of stc_exp, dyn_exp (all positions visible) and self_att is set.
class EncoderLayerImpl : public torch::nn::Module {
 public:
  explicit EncoderLayerImpl(const ModelConfig& config);
  torch::Tensor forward(const torch::Tensor& x, ExpansionTrace* trace = nullptr);
  double dropout = 0;
  LayerNorm norm_1{nullptr}, norm_2{nullptr};
  StaticExpansion stc_exp{nullptr};
  DynamicExpansion dyn_exp{nullptr};
  SelfAttention self_att{nullptr};
  FeedForward ff{nullptr};
};
TORCH_MODULE(EncoderLayer);

// Cross-attention of the decoder over the encoder output (reference
// MultiHeadAttention). Keys/values are projected separately so decoding can
// compute them once per image.
class CrossAttentionImpl : public torch::nn::Module {
 public:
  CrossAttentionImpl(int64_t d_model, int64_t heads);
  torch::Tensor project_keys(const torch::Tensor& enc) { return split_heads(Wk(enc)); }
  torch::Tensor project_values(const torch::Tensor& enc) { return split_heads(Wv(enc)); }
  // q: B x T x d; keys/values: B x heads x N x d_k; mask: B x T x N (nonzero = visible) or undefined.
  // weights, when given, receives the attention weights B x heads x T x N.
  torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& keys, const torch::Tensor& values,
                       const torch::Tensor& mask, torch::Tensor* weights = nullptr);
  torch::Tensor split_heads(const torch::Tensor& x);  // B x N x d -> B x heads x N x d_k
  int64_t d_model, heads, d_k;
  Linear Wq{nullptr}, Wk{nullptr}, Wv{nullptr}, out_linear{nullptr};
};
TORCH_MODULE(CrossAttention);

// A pre-LN decoder layer whose self-mixing is config.decoder_layer's kind:
// exactly one of dyn_exp and self_att is set.
class DecoderLayerImpl : public torch::nn::Module {
 public:
  explicit DecoderLayerImpl(const ModelConfig& config);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cross_keys, const torch::Tensor& cross_values,
                        const torch::Tensor& self_mask, const torch::Tensor& cross_mask,
                        DecoderLayerTrace* trace = nullptr);
  // The part after the dynamic expansion: cross-attention and feed-forward.
  torch::Tensor cross_and_ff(torch::Tensor x, const torch::Tensor& cross_keys, const torch::Tensor& cross_values,
                             const torch::Tensor& cross_mask, torch::Tensor* cross_weights = nullptr);
  double dropout = 0;
  LayerNorm norm_1{nullptr}, norm_2{nullptr}, norm_3{nullptr};
  CrossAttention mha{nullptr};
  DynamicExpansion dyn_exp{nullptr};
  SelfAttention self_att{nullptr};
  FeedForward ff{nullptr};
};
TORCH_MODULE(DecoderLayer);

class EmbeddingLayerImpl : public torch::nn::Module {
 public:
  EmbeddingLayerImpl(int64_t vocab_size, int64_t d_model);
  torch::Tensor forward(const torch::Tensor& tokens);  // embed(tokens) * sqrt(d)
  int64_t d_model;
  double dropout = 0;
  Embedding embed{nullptr};
};
TORCH_MODULE(EmbeddingLayer);

// ---------------------------------------------------------------- whole model

class ExpansionNetImpl : public torch::nn::Module {
 public:
  // reference_init=false leaves the weights uninitialised (undefined values),
  // for models whose weights are loaded right after: building is then fast.
  ExpansionNetImpl(const ModelConfig& config, int64_t vocab_size, bool reference_init = true);

  torch::Tensor backbone(const torch::Tensor& images);
  // traces, when given, receives one ExpansionTrace per encoder layer.
  torch::Tensor encode(const torch::Tensor& features, std::vector<ExpansionTrace>* traces = nullptr);
  // Log-probabilities B x T x V. self_mask: B x T x T (nonzero = position u is
  // visible from t); cross_mask: B x T x N or undefined (all visible).
  // A PNAIC model (config().pnaic_groups = K) reads tokens as K groups of T/K
  // steps, group-major (expnet/model/pnaic.h), and wants step_causal_mask.
  torch::Tensor decode(const torch::Tensor& enc_out, const torch::Tensor& tokens, const torch::Tensor& self_mask,
                       const torch::Tensor& cross_mask = {});
  // decode() up to dec_reduce_norm (B x T x d), before the vocabulary projection.
  // traces, when given, receives one DecoderLayerTrace per decoder layer.
  torch::Tensor decode_hidden(const torch::Tensor& enc_out, const torch::Tensor& tokens, const torch::Tensor& self_mask,
                              const torch::Tensor& cross_mask = {}, std::vector<DecoderLayerTrace>* traces = nullptr);
  torch::Tensor log_probs(const torch::Tensor& hidden);  // log_softmax(vocab_linear(hidden))
  // Token embedding * sqrt(d) + learned positions starting at `first_position`.
  torch::Tensor embed_tokens(const torch::Tensor& tokens, int64_t first_position = 0);
  // Token embedding * sqrt(d) + the learned position of each column
  // (`positions`, T ids) + for a PNAIC model the group embedding of each column
  // (`groups`, T ids; undefined for an AIC model). tokens: B x T.
  torch::Tensor embed_tokens_at(const torch::Tensor& tokens, const torch::Tensor& positions,
                                const torch::Tensor& groups);

  // The reference initialisation: torch.nn's defaults, then Swin's (truncated
  // normal 0.02 for Linear weights, zero biases, LayerNorm 1/0), then
  // Xavier-uniform on every tensor with more than one dimension. Uses the
  // global LibTorch generator (torch::manual_seed).
  void reset_parameters();
  void set_dropout(const DropoutRates& rates);
  // Inference precision of the Linears of the backbone and the encoder
  // (LinearImpl::set_precision) and of the backbone's attention products; bf16
  // also gives the decoder's Linears their bfloat16 copies, which decoding
  // steps read (few_rows_linear_bf16: half the bytes; sums in float32).
  // LayerNorms and the residual stream stay float32, and int8 leaves the
  // decoder float32.
  void set_precision(Precision precision);

  const ModelConfig& config() const { return config_; }
  int64_t vocab_size() const { return vocab_size_; }

  SwinTransformer swin_transf{nullptr};
  std::vector<EncoderLayer> encoders;
  std::vector<DecoderLayer> decoders;
  Linear input_linear{nullptr}, vocab_linear{nullptr};
  EmbeddingLayer out_embedder{nullptr};
  Embedding pos_encoder{nullptr};
  Linear enc_reduce_group{nullptr};
  LayerNorm enc_reduce_norm{nullptr};
  Linear dec_reduce_group{nullptr};
  LayerNorm dec_reduce_norm{nullptr};
  Embedding pnaic_group_embed{nullptr};  // K x d_model, PNAIC models only (not in the reference)

 private:
  // embed_tokens_at without the position check (its callers made it).
  torch::Tensor embed_checked(const torch::Tensor& tokens, const torch::Tensor& positions, const torch::Tensor& groups);
  ModelConfig config_;
  int64_t vocab_size_;
  DropoutRates dropout_;
};
TORCH_MODULE(ExpansionNet);

// The reference decoder self-mask: M[b,t,u] = 1 iff u <= t and neither token t
// nor token u is padding (pad_id < 0: no padding). B x T x T bool.
torch::Tensor causal_self_mask(const torch::Tensor& tokens, int64_t pad_id);
// The reference cross-attention mask: rows of padding tokens fully masked.
// B x T x enc_len bool.
torch::Tensor cross_attention_mask(const torch::Tensor& tokens, int64_t pad_id, int64_t enc_len);

}  // namespace expnet
