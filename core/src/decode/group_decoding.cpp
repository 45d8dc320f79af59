// PNAIC decoding (group_decoding.h). The incremental step is the block form of
// the AIC one: a step feeds K positions per row that see each other. Under the
// step-causal mask an expanded element (u, e) sees exactly the positions of
// steps <= step(u), all known once its step is fed, so its forward output
// F[u,e] + B_e + C_u is final then and is cached as it is (docs/pnaic.md).
#include "expnet/decode/group_decoding.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "expnet/model/expansion_net.h"
#include "expnet/model/pnaic.h"
#include "decode/fused_cpu_caches.h"
#include "kernels/cpu/step_kernels.h"

namespace expnet {
namespace {

// One decoder layer's caches, rows x capacity positions (step-major: position
// t * K + g), grown by doubling; the expansion's as the fused CPU kernel keeps
// them (step_kernels.h), which the LibTorch path reads alike.
struct LayerCaches {
  BlockExpansionCaches expansion;
  torch::Tensor cross_keys, cross_keys_t, cross_values;  // images x heads x N x d_k (keys_t: x d_k x N)
  DynamicExpansionImpl::StackedInputs stacked_inputs;    // the five linears that read x, in one
};

// Left uninitialised past `used`: a step writes every position it feeds
// before anything reads it, and reads stop at the positions fed (zero-filling
// the official model's element caches cost time per image: docs/performance.md,
// "Figures behind choices in the code").
torch::Tensor grown(const torch::Tensor& old, int64_t capacity, int64_t used) {
  auto sizes = old.sizes().vec();
  sizes[1] = capacity;
  auto out = torch::empty(sizes, old.options());
  if (used > 0) out.narrow(1, 0, used).copy_(old.narrow(1, 0, used));
  return out;
}

// log_probs()'s values with the softmax in the decoding threads, under its
// profiler label (as the AIC step's fused path).
torch::Tensor vocab_log_probs(ExpansionNetImpl& model, const torch::Tensor& hidden) {
  RECORD_USER_SCOPE("expnet::vocab_projection");
  const auto logits = model.vocab_linear(hidden);
  return log_softmax_rows_cpu(logits.view({-1, logits.size(-1)})).view(logits.sizes());
}

}  // namespace

std::string to_string(GroupEnd end) {
  static const char* const names[] = {"eos", "del", "length"};  // GroupEnd's order
  return names[static_cast<int>(end)];
}

struct GroupDecoderState::Impl {
  ExpansionNet model{nullptr};
  int64_t K = 0, rows = 0, steps = 0, capacity = 0;  // capacity in positions
  int64_t fed = 0;  // positions fed so far (K per step, or the live groups' for one image)
  bool fused = false;  // CPU float32: the fused kernels of step_kernels.h
  std::vector<LayerCaches> layers;
  torch::Tensor visible;  // rows x cap float: 1 for a live position fed so far (every layer's)

  void reserve(int64_t positions) {
    if (positions <= capacity) return;
    const int64_t cap = std::max(positions, std::max<int64_t>(capacity * 2, 8 * K));
    const int64_t used = fed;
    visible = grown(visible, cap, used);
    for (size_t l = 0; l < layers.size(); ++l) {
      auto& c = layers[l].expansion;
      const int64_t NE = model->decoders[l]->dyn_exp->num_exp;
      for (auto* t : {&c.cond, &c.keys, &c.class_a, &c.class_b}) *t = grown(*t, cap, used);
      for (auto* t : {&c.elem_a, &c.elem_b}) *t = grown(*t, cap * NE, used * NE);
      c.visible = visible;
    }
    capacity = cap;
  }

  // Dynamic Expansion of the step's K new positions (x: rows x K x d, after norm_1).
  torch::Tensor expansion(size_t l, DynamicExpansionImpl& dyn, const torch::Tensor& x) {
    auto& c = layers[l].expansion;
    const int64_t R = rows, P = x.size(1), NE = dyn.num_exp, d = dyn.d_model, n0 = fed, n = n0 + P;
    const double scale = std::sqrt(static_cast<double>(d));
    const auto cond = dyn.cond_embed(x), key = dyn.key_linear(x);  // R x P x d
    c.cond.narrow(1, n0, P).copy_(cond);
    c.keys.narrow(1, n0, P).copy_(key);
    c.class_a.narrow(1, n0, P).copy_(dyn.class_a_embed(x));
    c.class_b.narrow(1, n0, P).copy_(dyn.class_b_embed(x));
    const auto keys = c.keys.narrow(1, 0, n), conds = c.cond.narrow(1, 0, n);
    const auto seen = visible.narrow(1, 0, n);                       // R x n
    const auto& slot_queries = dyn.query_exp_vectors->weight;         // NE x d
    const auto& slot_biases = dyn.bias_exp_vectors->weight;           // NE x d

    // Forward: new elements (p, e) over the live positions of steps <= t.
    const auto slot_keys = torch::matmul(keys, slot_queries.t()).transpose(1, 2);        // R x NE x n: Q_e . K_v
    const auto cond_keys = torch::matmul(cond, keys.transpose(1, 2));                     // R x P x n: C_p . K_v
    const auto z = (slot_keys.unsqueeze(1) + cond_keys.unsqueeze(2)) / scale;             // R x P x NE x n
    const auto seen_keys = seen.reshape({R, 1, 1, n});
    const auto bias = (slot_biases.view({1, 1, NE, d}) + cond.unsqueeze(2)).reshape({R, P * NE, d});
    const auto forward = [&](const torch::Tensor& r, const torch::Tensor& classes) {
      const auto route = normalise_expansion_rows(r * seen_keys).reshape({R, P * NE, n});
      return torch::matmul(route, classes.narrow(1, 0, n)) + bias;  // R x P*NE x d
    };
    c.elem_a.narrow(1, n0 * NE, P * NE).copy_(forward(torch::relu(z), c.class_a));
    c.elem_b.narrow(1, n0 * NE, P * NE).copy_(forward(torch::relu(-z), c.class_b));

    // Backward: new position p over the elements (u, e) of live positions u < n.
    const auto key_slots = torch::matmul(key, slot_queries.t());                          // R x P x NE: Q_e . K_p
    const auto key_conds = torch::matmul(key, conds.transpose(1, 2));                     // R x P x n: C_u . K_p
    const auto zb = ((key_conds.unsqueeze(-1) + key_slots.unsqueeze(2)) / scale);          // R x P x n x NE
    const auto seen_elems = seen.reshape({R, 1, n, 1});
    const auto backward = [&](const torch::Tensor& r, const torch::Tensor& elems) {
      const auto w = normalise_expansion_rows((r * seen_elems).reshape({R, P, n * NE}));
      return torch::matmul(w, elems.narrow(1, 0, n * NE));  // R x P x d
    };
    const auto out_a = backward(torch::relu(zb), c.elem_a);
    const auto out_b = backward(torch::relu(-zb), c.elem_b);
    const auto selector = torch::sigmoid(dyn.selector_embed(x));
    return selector * out_a + (1 - selector) * out_b;
  }
};

GroupDecoderState::GroupDecoderState(const ExpansionNet& model, const at::Tensor& enc_out, bool cpu_kernels)
    : impl_(std::make_unique<Impl>()) {
  auto& s = *impl_;
  s.model = model;
  if (!model->config().is_pnaic())
    throw std::invalid_argument("PNAIC decoding: the model is not a PNAIC model (its config has no pnaic_groups)");
  if (model->is_training()) throw std::logic_error("GroupDecoderState: the model must be in eval() mode");
  if (enc_out.dim() != 3 || enc_out.size(2) != model->config().d_model)
    throw std::invalid_argument("GroupDecoderState: encoder output must be images x N x d_model");
  c10::InferenceMode inference;
  s.K = model->config().pnaic_groups;
  s.rows = enc_out.size(0);
  s.fused = cpu_kernels && enc_out.device().is_cpu() && enc_out.scalar_type() == torch::kFloat;
  s.visible = torch::zeros({s.rows, 0}, enc_out.options());
  for (auto& layer : s.model->decoders) {
    LayerCaches c;
    const int64_t d = layer->dyn_exp->d_model;
    auto& e = c.expansion;
    for (auto* t : {&e.cond, &e.keys, &e.class_a, &e.class_b, &e.elem_a, &e.elem_b})
      *t = torch::zeros({s.rows, 0, d}, enc_out.options());
    e.visible = s.visible;
    c.cross_keys = layer->mha->project_keys(enc_out);
    c.cross_values = layer->mha->project_values(enc_out).contiguous();
    if (s.fused) {
      c.cross_keys_t = c.cross_keys.transpose(2, 3).contiguous();
      c.stacked_inputs = layer->dyn_exp->stacked_inputs();
    }
    s.layers.push_back(std::move(c));
  }
}

GroupDecoderState::~GroupDecoderState() = default;

int64_t GroupDecoderState::steps() const { return impl_->steps; }

at::Tensor GroupDecoderState::step(const at::Tensor& tokens_in, const at::Tensor& live_in) {
  auto& s = *impl_;
  auto& model = *s.model;
  if (tokens_in.dim() != 2 || tokens_in.size(0) != s.rows || tokens_in.size(1) != s.K)
    throw std::invalid_argument("GroupDecoderState::step: expected rows x K = " + std::to_string(s.rows) + " x " +
                                std::to_string(s.K) + " tokens");
  c10::InferenceMode inference;
  const auto device = s.visible.device();
  const auto tokens = tokens_in.to(device, torch::kLong).contiguous();
  // One image: only its live groups are fed (an ended group's position would
  // be hidden anyway), so later steps cost less. Several: every group, the
  // ended ones hidden, so rows stay aligned.
  const bool compact = s.rows == 1;
  const auto live = live_in.to(device).to(torch::kBool);
  auto groups = torch::arange(s.K, tokens.options());
  auto fed_tokens = tokens;
  if (compact) {
    groups = live[0].nonzero().view(-1);
    fed_tokens = tokens.index_select(1, groups);
  }
  const int64_t P = groups.numel(), n0 = s.fed;
  if (P == 0) throw std::invalid_argument("GroupDecoderState::step: every group has ended");
  s.reserve(n0 + P);
  s.visible.narrow(1, n0, P).copy_(compact ? torch::ones({1, P}, s.visible.options()) : live.to(s.visible.scalar_type()));
  const auto positions = torch::full({P}, s.steps, tokens.options());
  RECORD_USER_SCOPE("expnet::decoder_step");
  auto y = model.embed_tokens_at(fed_tokens, positions, groups);  // rows x P x d (checks steps < max_seq_len)
  const int64_t R = s.rows, d = model.config().d_model;
  std::vector<int64_t> row_image;  // R * P query rows -> image, for the fused cross-attention
  for (int64_t r = 0; r < R * P; ++r) row_image.push_back(r / P);
  std::vector<torch::Tensor> outputs;
  for (size_t l = 0; l < s.layers.size(); ++l) {
    auto& layer = *model.decoders[l];
    auto& caches = s.layers[l];
    {
      RECORD_USER_SCOPE("expnet::decoder_step.dynamic_expansion");
      const auto x = step_layer_norm(*layer.norm_1, y, s.fused);
      if (s.fused) {
        const auto& stacked = caches.stacked_inputs;
        const auto parts = stacked.step(x);  // R x K x 5d
        y = y + block_expansion_cpu(parts, layer.dyn_exp->query_exp_vectors->weight,
                                    layer.dyn_exp->bias_exp_vectors->weight, caches.expansion, n0);
      } else {
        y = y + s.expansion(l, *layer.dyn_exp, x);
      }
    }
    {
      RECORD_USER_SCOPE("expnet::decoder_step.cross_attention");
      const auto q_in = step_layer_norm(*layer.norm_2, y, s.fused);
      if (s.fused) {
        auto& mha = *layer.mha;
        const auto q = mha.Wq(q_in).view({R * P, d});
        const double scale = 1.0 / std::sqrt(static_cast<double>(mha.d_k));
        y = y + mha.out_linear(
                    cross_attention_cpu(q, caches.cross_keys_t, caches.cross_values, row_image, scale).view({R, P, d}));
      } else {
        y = y + layer.mha->attend(q_in, caches.cross_keys, caches.cross_values, {});
      }
    }
    {
      RECORD_USER_SCOPE("expnet::decoder_step.feed_forward");
      y = y + layer.ff(step_layer_norm(*layer.norm_3, y, s.fused));
    }
    outputs.push_back(y);
  }
  y = y + model.dec_reduce_group(torch::cat(outputs, -1));
  ++s.steps;
  s.fed += P;
  const auto hidden = step_layer_norm(*model.dec_reduce_norm, y, s.fused);
  const auto log_probs = s.fused ? vocab_log_probs(model, hidden) : model.log_probs(hidden);
  if (!compact || P == s.K) return log_probs;
  // The ended groups' rows: nothing was computed for them (callers skip them).
  auto all = torch::zeros({1, s.K, log_probs.size(2)}, log_probs.options());
  all.index_copy_(1, groups, log_probs);
  return all;
}

void check_group_decoding_options(const DecodingOptions& o) {
  const auto refuse = [](const std::string& what) {
    throw std::invalid_argument("PNAIC models decode greedily per group: " + what +
                                " is not available for them (docs/pnaic.md)");
  };
  if (o.search == SearchKind::Sampling) refuse("sampling");
  if (o.search == SearchKind::Beam && o.beam_size > 1) refuse("beam search (beam " + std::to_string(o.beam_size) + ")");
  if (o.num_hypotheses > 1) refuse("an n-best list (" + std::to_string(o.num_hypotheses) + ")");
  if (o.min_length > 0) refuse("min_length");
  if (o.no_repeat_ngram_size > 0) refuse("no_repeat_ngram_size");
  if (o.repetition_penalty != 1.0) refuse("repetition_penalty");
  if (o.block_bad_endings) refuse("block_bad_endings");
}

std::vector<DecodingResult> decode_groups(const ExpansionNet& model, const at::Tensor& enc_out,
                                          const GroupSpecialTokens& special, const DecodingOptions& options) {
  options.validate();
  check_group_decoding_options(options);
  if (special.del < 0) throw std::invalid_argument("PNAIC decoding: the vocabulary has no DEL token");
  c10::InferenceMode inference;
  GroupDecoderState state(model, enc_out);
  const int64_t R = enc_out.size(0), K = model->config().pnaic_groups;
  const int64_t max_steps =
      std::max<int64_t>(1, (options.max_length > 0 ? options.max_length : model->config().max_seq_len) - 1);
  std::vector<std::vector<WordGroup>> groups(static_cast<size_t>(R), std::vector<WordGroup>(static_cast<size_t>(K)));
  std::vector<std::vector<bool>> ended(static_cast<size_t>(R), std::vector<bool>(static_cast<size_t>(K), false));
  std::vector<int> steps(static_cast<size_t>(R), 0);
  auto tokens = torch::full({R, K}, special.sos, torch::kLong);
  auto live = torch::ones({R, K}, torch::kBool);
  const auto current_caption = [&](size_t r) {
    std::vector<int64_t> ids{special.sos};
    for (const auto& g : groups[r])
      if (g.end != GroupEnd::del) ids.insert(ids.end(), g.tokens.begin(), g.tokens.end());
    return ids;
  };
  for (int64_t t = 0; t < max_steps; ++t) {
    auto log_probs = state.step(tokens, live).to(torch::kCPU, torch::kFloat).contiguous();  // R x K x V
    const int64_t V = log_probs.size(2);
    auto* lp = log_probs.data_ptr<float>();
    auto next = torch::full({R, K}, special.eos, torch::kLong);
    auto next_live = torch::zeros({R, K}, torch::kBool);
    auto next_ids = next.accessor<int64_t, 2>();
    auto next_flags = next_live.accessor<bool, 2>();
    bool any_live = false;
    for (int64_t r = 0; r < R; ++r) {
      const size_t ri = static_cast<size_t>(r);
      bool row_live = false;
      std::vector<int64_t> step_words(static_cast<size_t>(K), -1);
      for (int64_t g = 0; g < K; ++g) {
        auto& group = groups[ri][static_cast<size_t>(g)];
        if (ended[ri][static_cast<size_t>(g)]) continue;
        float* row = lp + (r * K + g) * V;
        if (options.max_word_run > 0 && static_cast<int>(group.tokens.size()) >= options.max_word_run) {
          const int64_t last = group.tokens.back();
          const bool run = std::all_of(group.tokens.end() - options.max_word_run, group.tokens.end(),
                                       [&](int64_t w) { return w == last; });
          if (run) row[last] = -std::numeric_limits<float>::infinity();
        }
        const int64_t best = std::max_element(row, row + V) - row;
        group.token_logprobs.push_back(row[best]);  // the model's own: only a banned word was changed
        step_words[static_cast<size_t>(g)] = best;
        if (best == special.eos || best == special.del) {
          group.end = best == special.eos ? GroupEnd::eos : GroupEnd::del;
          ended[ri][static_cast<size_t>(g)] = true;
        } else {
          group.tokens.push_back(best);
          next_ids[r][g] = best;
          next_flags[r][g] = true;
          row_live = true;
        }
      }
      if (!std::all_of(step_words.begin(), step_words.end(), [](int64_t w) { return w < 0; })) steps[ri] = int(t + 1);
      any_live = any_live || row_live;
      if (options.on_step && steps[ri] == t + 1) {
        StepUpdate update;
        update.image = r;
        update.step = static_cast<int>(t + 1);
        update.best = current_caption(ri);
        update.finished = !row_live;
        update.group_words = step_words;
        options.on_step(update);
      }
    }
    tokens = next;
    live = next_live;
    if (!any_live) break;
  }
  std::vector<DecodingResult> results(static_cast<size_t>(R));
  for (int64_t r = 0; r < R; ++r) {
    const size_t ri = static_cast<size_t>(r);
    Hypothesis h;
    h.tokens = current_caption(ri);
    bool cut = false;
    float eos_logprob = 0;
    for (const auto& g : groups[ri]) {
      for (const float v : g.token_logprobs) h.sum_logprob += v;
      if (g.end == GroupEnd::del) continue;
      cut = cut || g.end == GroupEnd::length;
      if (g.end == GroupEnd::eos) eos_logprob += g.token_logprobs.back();
      if (options.return_token_logprobs)
        h.token_logprobs.insert(h.token_logprobs.end(), g.token_logprobs.begin(),
                                g.token_logprobs.begin() + static_cast<std::ptrdiff_t>(g.tokens.size()));
    }
    // The caption ends (EOS) when every group has; its log-prob is the sum of
    // the kept groups' EOS log-probs. A group cut by the step limit leaves it
    // open, as an AIC caption cut by max_length is.
    if (!cut) {
      h.tokens.push_back(special.eos);
      if (options.return_token_logprobs) h.token_logprobs.push_back(eos_logprob);
    }
    h.score = h.sum_logprob;
    h.groups = std::move(groups[ri]);
    if (!options.return_token_logprobs)
      for (auto& g : h.groups) g.token_logprobs.clear();
    results[ri].hypotheses.push_back(std::move(h));
    results[ri].steps = steps[ri];
  }
  return results;
}

}  // namespace expnet
