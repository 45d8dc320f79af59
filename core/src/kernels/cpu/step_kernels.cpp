// See step_kernels.h. Notation as in DecoderState: position u < n = t+1,
// slot e < NE, Q_e / B_e the slot queries / biases, C_u / K_u the cond / key
// rows, z[u,e,v] = (Q_e + C_u) . K_v / sqrt(d).
#include "kernels/cpu/step_kernels.h"

#include "kernels/cpu/step_threads.h"
#include "kernels/cpu/vector_math.h"

#include <ATen/Functions.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

namespace expnet {
namespace {

using namespace vector_math;

// out = (x - max) - log(sum exp(x - max)), LibTorch's order of operations
// (out holds the exponentials until the log of their sum is known).
EXPNET_VECTOR_CLONES void log_softmax_row(const float* x, float* out, int64_t n) {
  const float m = max_of(x, n);
  const float log_sum = static_cast<float>(std::log(exp_shifted<double>(x, m, out, n)));
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] - m) - log_sum;
}

// w / (sum w + eps) with w = relu(sign * z), the expansion's normalisation.
void normalised_relu(const float* z, float sign, float* w, int64_t n) {
  float sum = 0.f;
  for (int64_t i = 0; i < n; ++i) {
    w[i] = std::max(0.f, sign * z[i]);
    sum += w[i];
  }
  const float denom = sum + static_cast<float>(kExpansionEps);
  for (int64_t i = 0; i < n; ++i) w[i] /= denom;
}

struct Shapes {
  int64_t d, ne, t, n;
  float inv_scale;
};

struct Scratch {
  std::vector<int64_t> row_at;  // block row of this row's entry, per position u < n
  std::vector<float> cond_keys, position_part, z, w, mixed, per_slot, per_position, out_a, out_b;
  explicit Scratch(const Shapes& s)
      : row_at(s.n), cond_keys(s.n), position_part(s.n), z(s.n * s.ne), w(s.n * s.ne), mixed(s.n), per_slot(s.ne),
        per_position(s.n), out_a(s.d), out_b(s.d) {}
};

// The blocks' data, per position u.
struct BlockPointers {
  std::vector<float*> cond, keys, class_a, class_b, slots, route_a, route_b;
  explicit BlockPointers(std::vector<ExpansionBlock>& blocks) {
    for (auto& b : blocks) {
      cond.push_back(b.cond.data_ptr<float>());
      keys.push_back(b.keys.data_ptr<float>());
      class_a.push_back(b.class_a.data_ptr<float>());
      class_b.push_back(b.class_b.data_ptr<float>());
      slots.push_back(b.slot_scores.data_ptr<float>());
      route_a.push_back(b.route_a.data_ptr<float>());
      route_b.push_back(b.route_b.data_ptr<float>());
    }
  }
};

// sum_ue w[u,e] (F[u,e] + B_e + C_u) with F[u,e] = sum_v route[u,e,v] class[v]
// (v <= u): the backward read of one stream for the new position.
void backward_stream(const Shapes& s, const float* w, const std::vector<float*>& route,
                     const std::vector<float*>& classes, const std::vector<float*>& cond, const float* slot_biases,
                     Scratch& tmp, float* out) {
  std::fill(tmp.mixed.begin(), tmp.mixed.end(), 0.f);
  std::fill(tmp.per_slot.begin(), tmp.per_slot.end(), 0.f);
  for (int64_t u = 0; u < s.n; ++u) {
    const float* rows = route[static_cast<size_t>(u)] + tmp.row_at[static_cast<size_t>(u)] * s.ne * (u + 1);
    float position_sum = 0.f;
    for (int64_t e = 0; e < s.ne; ++e) {
      const float weight = w[u * s.ne + e];
      if (weight == 0.f) continue;
      position_sum += weight;
      tmp.per_slot[static_cast<size_t>(e)] += weight;
      add_scaled(tmp.mixed.data(), weight, rows + e * (u + 1), u + 1);
    }
    tmp.per_position[static_cast<size_t>(u)] = position_sum;
  }
  std::fill(out, out + s.d, 0.f);
  for (int64_t v = 0; v < s.n; ++v) {
    const int64_t row = tmp.row_at[static_cast<size_t>(v)];
    add_scaled(out, tmp.mixed[static_cast<size_t>(v)], classes[static_cast<size_t>(v)] + row * s.d, s.d);
    add_scaled(out, tmp.per_position[static_cast<size_t>(v)], cond[static_cast<size_t>(v)] + row * s.d, s.d);
  }
  for (int64_t e = 0; e < s.ne; ++e) add_scaled(out, tmp.per_slot[static_cast<size_t>(e)], slot_biases + e * s.d, s.d);
}

// Row r's step: writes its entries of block t, returns its output in `out`.
EXPNET_VECTOR_CLONES void step_row(const Shapes& s, int64_t r, const float* part, const float* selector,
                                   const float* queries, const float* biases, const BlockPointers& b,
                                   const int64_t* lineage, Scratch& tmp, float* out) {
  const int64_t d = s.d, ne = s.ne, t = s.t, n = s.n;
  for (int64_t u = 0; u < t; ++u) tmp.row_at[static_cast<size_t>(u)] = lineage[u];
  tmp.row_at[static_cast<size_t>(t)] = r;
  const auto at = [&](const std::vector<float*>& blocks, int64_t u, int64_t width) {
    return blocks[static_cast<size_t>(u)] + tmp.row_at[static_cast<size_t>(u)] * width;
  };
  // Block t: the new position's linear outputs and Q_e . K_t.
  float* cond_t = at(b.cond, t, d);
  float* key_t = at(b.keys, t, d);
  std::memcpy(cond_t, part, sizeof(float) * d);
  std::memcpy(key_t, part + d, sizeof(float) * d);
  std::memcpy(at(b.class_a, t, d), part + 2 * d, sizeof(float) * d);
  std::memcpy(at(b.class_b, t, d), part + 3 * d, sizeof(float) * d);
  float* slots_t = at(b.slots, t, ne);
  for (int64_t e = 0; e < ne; ++e) slots_t[e] = dot(queries + e * d, key_t, d);
  for (int64_t u = 0; u < n; ++u) {
    tmp.cond_keys[static_cast<size_t>(u)] = dot(cond_t, at(b.keys, u, d), d);      // C_t . K_u
    tmp.position_part[static_cast<size_t>(u)] = dot(at(b.cond, u, d), key_t, d);  // C_u . K_t
  }
  // Forward rows of the new elements (t, e) over keys u <= t.
  for (int64_t e = 0; e < ne; ++e) {
    for (int64_t u = 0; u < n; ++u)
      tmp.z[static_cast<size_t>(u)] = (at(b.slots, u, ne)[e] + tmp.cond_keys[static_cast<size_t>(u)]) * s.inv_scale;
    normalised_relu(tmp.z.data(), 1.f, at(b.route_a, t, ne * n) + e * n, n);
    normalised_relu(tmp.z.data(), -1.f, at(b.route_b, t, ne * n) + e * n, n);
  }
  // Backward row of the new position over all elements (u, e), u <= t.
  for (int64_t u = 0; u < n; ++u)
    for (int64_t e = 0; e < ne; ++e)
      tmp.z[static_cast<size_t>(u * ne + e)] = (tmp.position_part[static_cast<size_t>(u)] + slots_t[e]) * s.inv_scale;
  normalised_relu(tmp.z.data(), 1.f, tmp.w.data(), n * ne);
  backward_stream(s, tmp.w.data(), b.route_a, b.class_a, b.cond, biases, tmp, tmp.out_a.data());
  normalised_relu(tmp.z.data(), -1.f, tmp.w.data(), n * ne);
  backward_stream(s, tmp.w.data(), b.route_b, b.class_b, b.cond, biases, tmp, tmp.out_b.data());
  for (int64_t i = 0; i < d; ++i)
    out[i] = selector[i] * tmp.out_a[static_cast<size_t>(i)] + (1.f - selector[i]) * tmp.out_b[static_cast<size_t>(i)];
}

// One query row and head: scores over the N keys, as updates by the rows of
// the transposed keys (vectorised, no horizontal sums), their softmax, and the
// weighted sum of the values, sum_j p[j] V[j]. `probs` (N floats) receives the
// attention weights.
EXPNET_VECTOR_CLONES void attend(const float* q, const float* keys_t, const float* values, int64_t N, int64_t dk,
                                 float scale, float* probs, float* out) {
  std::fill(probs, probs + N, 0.f);
  for (int64_t i = 0; i < dk; ++i) add_scaled(probs, q[i] * scale, keys_t + i * N, N);
  softmax_in_place(probs, N);
  std::fill(out, out + dk, 0.f);
  for (int64_t j = 0; j < N; ++j) add_scaled(out, probs[j], values + j * dk, dk);
}

bool cpu_float_contiguous(const at::Tensor& x) {
  return x.defined() && x.device().is_cpu() && x.scalar_type() == at::kFloat && x.is_contiguous();
}

// PNAIC's block step (block_expansion_cpu), per row r: position p = first + j
// of the step. Pointers are to row r's caches; z[e,v] = (Q_e + C_p) . K_v.
struct BlockRow {
  const float *cond, *keys, *class_a, *class_b, *visible;  // n x d (visible: n)
  float *elem_a, *elem_b;                                  // n*NE x d
};

// The forward outputs of position p's elements (p, e): F[p,e] + B_e + C_p over
// the visible keys v < n, written to elem_{a,b}[p, e].
EXPNET_VECTOR_CLONES void block_forward(const BlockRow& row, int64_t p, int64_t n, int64_t ne, int64_t d,
                                        float inv_scale, const float* queries, const float* biases, float* z,
                                        float* w) {
  const float* c = row.cond + p * d;
  for (int64_t v = 0; v < n; ++v) {
    const bool seen = row.visible[v] > 0.f;
    const float ck = seen ? dot(c, row.keys + v * d, d) : 0.f;
    for (int64_t e = 0; e < ne; ++e)
      z[e * n + v] = seen ? (dot(queries + e * d, row.keys + v * d, d) + ck) * inv_scale : 0.f;
  }
  for (const float sign : {1.f, -1.f}) {
    const float* classes = sign > 0 ? row.class_a : row.class_b;
    float* elems = sign > 0 ? row.elem_a : row.elem_b;
    for (int64_t e = 0; e < ne; ++e) {
      normalised_relu(z + e * n, sign, w, n);  // hidden keys have z = 0: weight 0
      float* out = elems + (p * ne + e) * d;
      for (int64_t i = 0; i < d; ++i) out[i] = biases[e * d + i] + c[i];
      for (int64_t v = 0; v < n; ++v)
        if (w[v] != 0.f) add_scaled(out, w[v], classes + v * d, d);
    }
  }
}

// Position p's output: the elements (u, e) of the visible positions u < n,
// weighted by relu(+-z[u,e,p]) normalised over all of them, mixed by the selector.
EXPNET_VECTOR_CLONES void block_backward(const BlockRow& row, int64_t p, int64_t n, int64_t ne, int64_t d,
                                         float inv_scale, const float* queries, const float* selector, float* z,
                                         float* w, float* out_a, float* out_b, float* out) {
  const float* k = row.keys + p * d;
  std::vector<float> slot(static_cast<size_t>(ne));
  for (int64_t e = 0; e < ne; ++e) slot[static_cast<size_t>(e)] = dot(k, queries + e * d, d);
  for (int64_t u = 0; u < n; ++u) {
    const bool seen = row.visible[u] > 0.f;
    const float kc = seen ? dot(k, row.cond + u * d, d) : 0.f;
    for (int64_t e = 0; e < ne; ++e) z[u * ne + e] = seen ? (kc + slot[static_cast<size_t>(e)]) * inv_scale : 0.f;
  }
  for (const float sign : {1.f, -1.f}) {
    const float* elems = sign > 0 ? row.elem_a : row.elem_b;
    float* acc = sign > 0 ? out_a : out_b;
    normalised_relu(z, sign, w, n * ne);
    std::fill(acc, acc + d, 0.f);
    for (int64_t i = 0; i < n * ne; ++i)
      if (w[i] != 0.f) add_scaled(acc, w[i], elems + i * d, d);
  }
  for (int64_t i = 0; i < d; ++i) out[i] = selector[i] * out_a[i] + (1.f - selector[i]) * out_b[i];
}

}  // namespace

at::Tensor normalise_expansion_rows(const at::Tensor& w) { return w.div(w.sum(-1, /*keepdim=*/true).add(kExpansionEps)); }

bool block_expansion_cpu_applies(const at::Tensor& parts) { return cpu_float_contiguous(parts) && parts.dim() == 3; }

at::Tensor block_expansion_cpu(const at::Tensor& parts, const at::Tensor& slot_queries, const at::Tensor& slot_biases,
                               BlockExpansionCaches& caches, int64_t first) {
  const auto queries = slot_queries.contiguous(), biases = slot_biases.contiguous();
  const int64_t R = parts.size(0), P = parts.size(1), ne = queries.size(0), d = queries.size(1), n = first + P;
  const std::vector<at::Tensor> cached{caches.cond, caches.keys, caches.class_a, caches.class_b,
                                       caches.elem_a, caches.elem_b, caches.visible};
  bool ok = block_expansion_cpu_applies(parts) && parts.size(2) == 5 * d && cpu_float_contiguous(queries) &&
            cpu_float_contiguous(biases) && biases.sizes() == queries.sizes();
  for (const auto& t : cached) ok = ok && cpu_float_contiguous(t) && t.size(0) == R;
  if (!ok || caches.cond.size(1) < n || caches.elem_a.size(1) < n * ne || caches.visible.size(1) < n)
    throw std::invalid_argument("block_expansion_cpu: needs contiguous CPU float32 parts (rows x P x 5d), slot "
                                "queries and biases (NE x d) and caches with room for the step's positions");
  const int64_t cap = caches.cond.size(1);
  // The step's cond, key and class rows go into the caches first: its positions see each other.
  for (int64_t k = 0; k < 4; ++k)
    cached[static_cast<size_t>(k)].narrow(1, first, P).copy_(parts.narrow(2, k * d, d));
  const auto selector = at::sigmoid(parts.narrow(2, 4 * d, d)).contiguous();
  auto out = at::empty({R, P, d}, parts.options());
  const float inv_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  const auto row_of = [&](int64_t r) {
    return BlockRow{caches.cond.data_ptr<float>() + r * cap * d,    caches.keys.data_ptr<float>() + r * cap * d,
                    caches.class_a.data_ptr<float>() + r * cap * d, caches.class_b.data_ptr<float>() + r * cap * d,
                    caches.visible.data_ptr<float>() + r * cap,     caches.elem_a.data_ptr<float>() + r * cap * ne * d,
                    caches.elem_b.data_ptr<float>() + r * cap * ne * d};
  };
  const float *q = queries.data_ptr<float>(), *b = biases.data_ptr<float>(), *sel = selector.data_ptr<float>();
  float* out_data = out.data_ptr<float>();
  // Two regions: every new element's forward output before any position's backward step reads it.
  parallel_step(R * P, 1, [&](int64_t lo, int64_t hi) {
    std::vector<float> z(static_cast<size_t>(n * ne)), w(static_cast<size_t>(n));
    for (int64_t task = lo; task < hi; ++task)
      block_forward(row_of(task / P), first + task % P, n, ne, d, inv_scale, q, b, z.data(), w.data());
  });
  parallel_step(R * P, 1, [&](int64_t lo, int64_t hi) {
    std::vector<float> z(static_cast<size_t>(n * ne)), w(static_cast<size_t>(n * ne)), a(static_cast<size_t>(d)),
        bb(static_cast<size_t>(d));
    for (int64_t task = lo; task < hi; ++task)
      block_backward(row_of(task / P), first + task % P, n, ne, d, inv_scale, q, sel + task * d, z.data(), w.data(),
                     a.data(), bb.data(), out_data + task * d);
  });
  return out;
}

bool cross_attention_cpu_applies(const at::Tensor& q, const at::Tensor& keys_t, const at::Tensor& values) {
  return cpu_float_contiguous(q) && cpu_float_contiguous(keys_t) && cpu_float_contiguous(values) &&
         keys_t.dim() == 4 && values.dim() == 4 && values.size(0) == keys_t.size(0) &&
         values.size(1) == keys_t.size(1) && values.size(2) == keys_t.size(3) && values.size(3) == keys_t.size(2) &&
         q.dim() == 2 && q.size(1) == keys_t.size(1) * keys_t.size(2);
}

at::Tensor cross_attention_cpu(const at::Tensor& q, const at::Tensor& keys_t, const at::Tensor& values,
                               const std::vector<int64_t>& row_image, double scale) {
  if (!cross_attention_cpu_applies(q, keys_t, values) || static_cast<int64_t>(row_image.size()) != q.size(0))
    throw std::invalid_argument("cross_attention_cpu: needs contiguous CPU float32 q (rows x H*dk), keys_t (images x "
                                "H x dk x N), values (images x H x N x dk) and one image per row");
  const int64_t rows = q.size(0), H = values.size(1), N = values.size(2), dk = values.size(3);
  for (const auto image : row_image)
    if (image < 0 || image >= values.size(0)) throw std::invalid_argument("cross_attention_cpu: row image out of range");
  auto out = at::empty({rows, H * dk}, q.options());
  const float *q_data = q.data_ptr<float>(), *k_data = keys_t.data_ptr<float>(), *v_data = values.data_ptr<float>();
  float* out_data = out.data_ptr<float>();
  // One region for the whole attention: scores, softmax and weighted values per (row, head).
  const auto head_of = [&](int64_t task) { return (row_image[static_cast<size_t>(task / H)] * H + task % H) * N * dk; };
  parallel_step(rows * H, 1, [&](int64_t first, int64_t last) {
    std::vector<float> probs(static_cast<size_t>(N));
    for (int64_t task = first; task < last; ++task)
      attend(q_data + task * dk, k_data + head_of(task), v_data + head_of(task), N, dk, static_cast<float>(scale),
             probs.data(), out_data + task * dk);
  });
  return out;
}

bool expansion_step_cpu_applies(const at::Tensor& parts) { return cpu_float_contiguous(parts) && parts.dim() == 2; }

at::Tensor expansion_step_cpu(const at::Tensor& parts, const at::Tensor& slot_queries, const at::Tensor& slot_biases,
                              std::vector<ExpansionBlock>& blocks, const int64_t* lineage, int64_t lineage_stride) {
  const auto queries = slot_queries.contiguous(), biases = slot_biases.contiguous();
  const int64_t rows = parts.size(0), ne = queries.size(0), d = queries.size(1), t = static_cast<int64_t>(blocks.size());
  if (!expansion_step_cpu_applies(parts) || !cpu_float_contiguous(queries) || !cpu_float_contiguous(biases) ||
      parts.size(1) != 5 * d || biases.sizes() != queries.sizes() || (t > 0 && lineage_stride < t))
    throw std::invalid_argument("expansion_step_cpu: needs contiguous CPU float32 parts (rows x 5d), slot queries "
                                "and biases (NE x d) and a lineage entry per fed position");
  const auto options = parts.options();
  blocks.push_back({at::empty({rows, d}, options), at::empty({rows, d}, options), at::empty({rows, d}, options),
                    at::empty({rows, d}, options), at::empty({rows, ne}, options),
                    at::empty({rows, ne, t + 1}, options), at::empty({rows, ne, t + 1}, options)});
  const BlockPointers pointers(blocks);
  const Shapes s{d, ne, t, t + 1, static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)))};
  auto out = at::empty({rows, d}, options);
  // Exponentials are LibTorch's (vectorised): scalar expf would cost more than the step.
  const auto selector = at::sigmoid(parts.narrow(1, 4 * d, d)).contiguous();
  const float *part = parts.data_ptr<float>(), *selector_data = selector.data_ptr<float>();
  const float *query_data = queries.data_ptr<float>(), *bias_data = biases.data_ptr<float>();
  float* out_data = out.data_ptr<float>();
  parallel_step(rows, 1, [&](int64_t first, int64_t last) {
    Scratch tmp(s);
    for (int64_t r = first; r < last; ++r)
      step_row(s, r, part + r * 5 * d, selector_data + r * d, query_data, bias_data, pointers,
               lineage + r * lineage_stride, tmp, out_data + r * d);
  });
  return out;
}

bool layer_norm_rows_cpu_applies(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return cpu_float_contiguous(x) && cpu_float_contiguous(weight) && cpu_float_contiguous(bias) && x.dim() >= 1 &&
         weight.dim() == 1 && x.size(-1) == weight.numel() && bias.numel() == weight.numel();
}

at::Tensor layer_norm_rows_cpu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps) {
  if (!layer_norm_rows_cpu_applies(x, weight, bias))
    throw std::invalid_argument("layer_norm_rows_cpu: needs contiguous CPU float32 rows, weight and bias");
  const int64_t d = weight.numel(), rows = x.numel() / d;
  auto out = at::empty_like(x);
  const float *in = x.data_ptr<float>(), *w = weight.data_ptr<float>(), *b = bias.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = in + r * d;
    // Mean and biased variance in double: LibTorch's own accumulate more
    // precisely than a float sum would.
    double mean = 0, var = 0;
    for (int64_t i = 0; i < d; ++i) mean += row[i];
    mean /= static_cast<double>(d);
    for (int64_t i = 0; i < d; ++i) var += (row[i] - mean) * (row[i] - mean);
    const float inv = static_cast<float>(1.0 / std::sqrt(var / static_cast<double>(d) + eps));
    const float m = static_cast<float>(mean);
    for (int64_t i = 0; i < d; ++i) o[r * d + i] = (row[i] - m) * inv * w[i] + b[i];
  }
  return out;
}

bool log_softmax_rows_cpu_applies(const at::Tensor& logits) { return cpu_float_contiguous(logits) && logits.dim() == 2; }

at::Tensor log_softmax_rows_cpu(const at::Tensor& logits) {
  if (!log_softmax_rows_cpu_applies(logits))
    throw std::invalid_argument("log_softmax_rows_cpu: needs a contiguous CPU float32 matrix (rows x vocabulary)");
  const int64_t rows = logits.size(0), n = logits.size(1);
  auto out = at::empty({rows, n}, logits.options());
  const float* in = logits.data_ptr<float>();
  float* out_data = out.data_ptr<float>();
  parallel_step(rows, 1, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) log_softmax_row(in + r * n, out_data + r * n, n);
  });
  return out;
}

}  // namespace expnet
