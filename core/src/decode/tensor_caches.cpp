// The decoding step in LibTorch operations (see tensor_caches.h). The
// arithmetic of the incremental Dynamic Expansion is explained in
// docs/decoding.md ("What a step caches").
#include "decode/tensor_caches.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "kernels/cpu/step_kernels.h"  // kExpansionEps

namespace expnet {
namespace {

// Positions the row caches start with: most captions fit, and longer
// decodings double it (a copy of what is there) up to T_max.
constexpr int64_t kInitialPositions = 8;

// One decoder layer's caches, per row, allocated for `capacity` positions so
// a step writes its position in place; positions >= length hold nothing yet.
struct RowCaches {
  torch::Tensor cond, keys;        // rows x cap x d      cond_embed(x_u), key_linear(x_u)
  torch::Tensor class_a, class_b;  // rows x cap x d      class_{a,b}_embed(x_u)
  torch::Tensor slot_scores;       // rows x cap x NE     Q_e . K_u (fixed once position u exists)
  torch::Tensor route_a, route_b;  // rows x cap*NE x cap normalised relu(+-z[u,e,v]), 0 for v > u
  // Each tensor with whether it is a route (position entries NE x cap wide).
  std::vector<std::pair<torch::Tensor*, bool>> all() {
    return {{&cond, false},        {&keys, false},   {&class_a, false}, {&class_b, false},
            {&slot_scores, false}, {&route_a, true}, {&route_b, true}};
  }
};

struct LayerShape {
  int64_t d = 0, num_exp = 0;
};

class TensorCaches final : public StepCaches {
 public:
  TensorCaches(const ExpansionNetImpl& model, const torch::TensorOptions& options)
      : options_(options), max_positions_(model.config().max_seq_len) {
    // A self-attention decoder (no expansion) keeps its keys/values in DecoderState.
    for (const auto& layer : model.decoders)
      if (layer->dyn_exp) layers_.push_back({layer->dyn_exp->d_model, layer->dyn_exp->num_exp});
    rows_.resize(layers_.size());
  }

  void begin_step(int64_t rows, int64_t t) override { reserve_positions(rows, t + 1, t); }

  torch::Tensor expansion(size_t layer, DynamicExpansionImpl& dyn, const torch::Tensor& parts_in,
                          int64_t t) override {
    auto& c = rows_[layer];
    const int64_t R = parts_in.size(0), NE = dyn.num_exp, d = dyn.d_model, n = t + 1, cap = capacity_;
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
    const auto slot_part = torch::matmul(key, slot_queries.t());  // R x 1 x NE: Q_e . K_t
    c.slot_scores.narrow(1, t, 1).copy_(slot_part);
    const auto slot_scores = c.slot_scores.narrow(1, 0, n);  // R x n x NE: Q_e . K_u

    // Forward rows of the new elements (t, e) over keys u <= t, as the full path
    // computes them; stored padded to the capacity (0: positions not yet seen).
    const auto cond_keys = (keys * cond).sum(-1);                                       // R x n: C_t . K_u
    const auto z_new = (slot_scores.transpose(1, 2) + cond_keys.unsqueeze(1)) / scale;  // R x NE x n
    const std::vector<int64_t> pad{0, cap - n};
    c.route_a.narrow(1, t * NE, NE).copy_(torch::constant_pad_nd(normalise_expansion_rows(torch::relu(z_new)), pad));
    c.route_b.narrow(1, t * NE, NE).copy_(torch::constant_pad_nd(normalise_expansion_rows(torch::relu(-z_new)), pad));

    // Backward row of position t over all elements (u, e), u <= t.
    const auto position_part = (conds * key).sum(-1).unsqueeze(-1);              // R x n x 1: C_u . K_t
    const auto z_back = ((position_part + slot_part) / scale).view({R, n * NE});  // (u, e) position-major
    const auto backward = [&](const torch::Tensor& weights, const torch::Tensor& route, const torch::Tensor& classes) {
      // sum_ue w[u,e] (F[u,e] + b[u,e]) with F[u,e] = route[u,e,:] classes and
      // b[u,e] = B_e + C_u.
      const auto mixed = (weights.unsqueeze(-1) * route.narrow(1, 0, n * NE).narrow(2, 0, n)).sum(1);  // R x n
      const auto grid = weights.view({R, n, NE});
      const auto per_slot = grid.sum(1);      // R x NE
      const auto per_position = grid.sum(2);  // R x n
      return ((mixed.unsqueeze(-1) * classes.narrow(1, 0, n)).sum(1) + (per_position.unsqueeze(-1) * conds).sum(1) +
              torch::matmul(per_slot, slot_biases))
          .unsqueeze(1);  // R x 1 x d
    };
    const auto out_a = backward(normalise_expansion_rows(torch::relu(z_back)), c.route_a, c.class_a);
    const auto out_b = backward(normalise_expansion_rows(torch::relu(-z_back)), c.route_b, c.class_b);
    const auto selector = torch::sigmoid(parts[4]);
    return selector * out_a + (1 - selector) * out_b;
  }

  torch::Tensor cross_attention(CrossAttentionImpl& mha, const CrossAttentionCache& cache, const torch::Tensor& q_in,
                                const RowImages& rows) override {
    return cross_attention_tensors(mha, cache, q_in, rows);
  }

  torch::Tensor norm(LayerNormImpl& layer, const torch::Tensor& x) override { return layer.forward(x); }

  torch::Tensor log_probs(ExpansionNetImpl& model, const torch::Tensor& hidden) override {
    return model.log_probs(hidden);
  }

  void end_step(int64_t, int64_t) override {}

  void reorder(const torch::Tensor& parents, int64_t length) override {
    const int64_t R = parents.numel();
    for (size_t l = 0; l < rows_.size(); ++l) {
      auto& rows = rows_[l];
      if (!rows.cond.defined()) continue;  // no step yet: allocated at the first
      const int64_t NE = layers_[l].num_exp;
      for (auto [cache, route] : rows.all()) {
        const int64_t used = length * (route ? NE : 1);
        auto sizes = cache->sizes().vec();
        sizes[0] = R;
        auto gathered = torch::empty(sizes, cache->options());  // entries beyond `used` are written before read
        gathered.narrow(1, 0, used).copy_(cache->narrow(1, 0, used).index_select(0, parents));
        *cache = std::move(gathered);
      }
    }
  }

 private:
  // Reordering reallocates the caches with the new row count, so only the
  // number of positions can fall short here. `length` positions are kept.
  void reserve_positions(int64_t R, int64_t positions, int64_t length) {
    if (positions <= capacity_) return;
    const int64_t wanted =
        capacity_ == 0 ? std::max(kInitialPositions, positions) : std::max(2 * capacity_, positions);
    const int64_t capacity = std::min(max_positions_, wanted);
    for (size_t l = 0; l < rows_.size(); ++l) {
      const int64_t d = layers_[l].d, NE = layers_[l].num_exp;
      // Uninitialised: a step writes its position's entries (route rows over
      // the whole width) before anything reads them.
      RowCaches grown;
      grown.cond = torch::empty({R, capacity, d}, options_);
      grown.keys = torch::empty({R, capacity, d}, options_);
      grown.class_a = torch::empty({R, capacity, d}, options_);
      grown.class_b = torch::empty({R, capacity, d}, options_);
      grown.slot_scores = torch::empty({R, capacity, NE}, options_);
      grown.route_a = torch::empty({R, capacity * NE, capacity}, options_);
      grown.route_b = torch::empty({R, capacity * NE, capacity}, options_);
      auto& old = rows_[l];
      if (old.cond.defined() && length > 0) {
        const auto fresh = grown.all(), kept = old.all();
        for (size_t k = 0; k < fresh.size(); ++k) {
          const bool route = fresh[k].second;
          const int64_t used = length * (route ? NE : 1);
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

  torch::TensorOptions options_;
  int64_t max_positions_ = 0;  // T_max: the model's max_seq_len
  int64_t capacity_ = 0;       // positions the row caches hold
  std::vector<LayerShape> layers_;
  std::vector<RowCaches> rows_;
};

}  // namespace

std::unique_ptr<StepCaches> make_tensor_caches(const ExpansionNetImpl& model, const torch::TensorOptions& options) {
  return std::make_unique<TensorCaches>(model, options);
}

torch::Tensor cross_attention_tensors(CrossAttentionImpl& mha, const CrossAttentionCache& cache,
                                      const torch::Tensor& q_in, const RowImages& rows) {
  const int64_t R = q_in.size(0), H = mha.heads, dk = mha.d_k;
  const double scale = std::sqrt(static_cast<double>(dk));
  const auto q = mha.Wq(q_in);  // R x 1 x d
  torch::Tensor out;
  if (rows.rows_per_image > 0) {
    // The k rows of an image are k queries against that image's keys.
    const int64_t k = rows.rows_per_image;
    const auto qh = q.view({rows.images, k, H, dk}).transpose(1, 2);  // I x H x k x dk
    auto scores = torch::softmax(torch::matmul(qh, cache.keys_t) / scale, -1);
    out = torch::matmul(scores, cache.values).transpose(1, 2).reshape({R, 1, H * dk});
  } else {
    const auto keys_t = cache.keys_t.index_select(0, rows.row_image);
    const auto values = cache.values.index_select(0, rows.row_image);
    const auto qh = q.view({R, 1, H, dk}).transpose(1, 2);  // R x H x 1 x dk
    auto scores = torch::softmax(torch::matmul(qh, keys_t) / scale, -1);
    out = torch::matmul(scores, values).transpose(1, 2).reshape({R, 1, H * dk});
  }
  return mha.out_linear(out);
}

}  // namespace expnet
