// See step_kernels.h. Notation as in DecoderState: position u < n = t+1,
// slot e < NE, Q_e / B_e the slot queries / biases, C_u / K_u the cond / key
// rows, z[u,e,v] = (Q_e + C_u) . K_v / sqrt(d).
#include "model/step_kernels.h"

#include <ATen/Parallel.h>
#include <ATen/Functions.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace expnet {
namespace {

// On x86-64 the kernels are compiled for AVX-512 and AVX2 machines too (the dot
// products and row updates inline into each clone and vectorise to its
// width); the loader picks one.
#if defined(__x86_64__) && defined(__GNUC__)
#define EXPNET_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define EXPNET_VECTOR_CLONES
#endif

float dot(const float* a, const float* b, int64_t n) {
  float s = 0.f;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

void add_scaled(float* out, float c, const float* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] += c * v[i];
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
  int64_t d, ne, cap, t, n;
  float inv_scale;
};

struct Scratch {
  std::vector<float> cond_keys, position_part, z, w, mixed, per_slot, per_position, out_a, out_b;
  explicit Scratch(const Shapes& s)
      : cond_keys(s.n), position_part(s.n), z(s.n * s.ne), w(s.n * s.ne), mixed(s.n), per_slot(s.ne),
        per_position(s.n), out_a(s.d), out_b(s.d) {}
};

struct RowCaches {
  float *cond, *keys, *class_a, *class_b, *slots, *route_a, *route_b;
};

// sum_ue w[u,e] (F[u,e] + B_e + C_u) with F[u,e] = route[u,e,:] classes: the
// backward read of one stream for the new position.
void backward_stream(const Shapes& s, const float* w, const float* route, const float* classes, const float* cond,
                     const float* slot_biases, Scratch& tmp, float* out) {
  std::fill(tmp.mixed.begin(), tmp.mixed.end(), 0.f);
  std::fill(tmp.per_slot.begin(), tmp.per_slot.end(), 0.f);
  for (int64_t u = 0; u < s.n; ++u) {
    float position_sum = 0.f;
    for (int64_t e = 0; e < s.ne; ++e) {
      const float weight = w[u * s.ne + e];
      if (weight == 0.f) continue;
      position_sum += weight;
      tmp.per_slot[static_cast<size_t>(e)] += weight;
      add_scaled(tmp.mixed.data(), weight, route + (u * s.ne + e) * s.cap, s.n);
    }
    tmp.per_position[static_cast<size_t>(u)] = position_sum;
  }
  std::fill(out, out + s.d, 0.f);
  for (int64_t v = 0; v < s.n; ++v) add_scaled(out, tmp.mixed[static_cast<size_t>(v)], classes + v * s.d, s.d);
  for (int64_t u = 0; u < s.n; ++u) add_scaled(out, tmp.per_position[static_cast<size_t>(u)], cond + u * s.d, s.d);
  for (int64_t e = 0; e < s.ne; ++e) add_scaled(out, tmp.per_slot[static_cast<size_t>(e)], slot_biases + e * s.d, s.d);
}

EXPNET_VECTOR_CLONES void step_row(const Shapes& s, const float* part, const float* selector, const float* queries, const float* biases,
              const RowCaches& c, Scratch& tmp, float* out) {
  const int64_t d = s.d, ne = s.ne, t = s.t, n = s.n;
  // Slot t of the caches: the new position's linear outputs and Q_e . K_t.
  float* cond_t = c.cond + t * d;
  float* key_t = c.keys + t * d;
  std::memcpy(cond_t, part, sizeof(float) * d);
  std::memcpy(key_t, part + d, sizeof(float) * d);
  std::memcpy(c.class_a + t * d, part + 2 * d, sizeof(float) * d);
  std::memcpy(c.class_b + t * d, part + 3 * d, sizeof(float) * d);
  for (int64_t e = 0; e < ne; ++e) c.slots[t * ne + e] = dot(queries + e * d, key_t, d);
  for (int64_t u = 0; u < n; ++u) {
    tmp.cond_keys[static_cast<size_t>(u)] = dot(cond_t, c.keys + u * d, d);      // C_t . K_u
    tmp.position_part[static_cast<size_t>(u)] = dot(c.cond + u * d, key_t, d);  // C_u . K_t
  }
  // Forward rows of the new elements (t, e) over keys u <= t; 0 beyond.
  for (int64_t e = 0; e < ne; ++e) {
    for (int64_t u = 0; u < n; ++u)
      tmp.z[static_cast<size_t>(u)] = (c.slots[u * ne + e] + tmp.cond_keys[static_cast<size_t>(u)]) * s.inv_scale;
    for (auto [route, sign] : {std::pair{c.route_a, 1.f}, std::pair{c.route_b, -1.f}}) {
      float* row = route + (t * ne + e) * s.cap;
      normalised_relu(tmp.z.data(), sign, row, n);
      std::fill(row + n, row + s.cap, 0.f);
    }
  }
  // Backward row of the new position over all elements (u, e), u <= t.
  for (int64_t u = 0; u < n; ++u)
    for (int64_t e = 0; e < ne; ++e)
      tmp.z[static_cast<size_t>(u * ne + e)] =
          (tmp.position_part[static_cast<size_t>(u)] + c.slots[t * ne + e]) * s.inv_scale;
  normalised_relu(tmp.z.data(), 1.f, tmp.w.data(), n * ne);
  backward_stream(s, tmp.w.data(), c.route_a, c.class_a, c.cond, biases, tmp, tmp.out_a.data());
  normalised_relu(tmp.z.data(), -1.f, tmp.w.data(), n * ne);
  backward_stream(s, tmp.w.data(), c.route_b, c.class_b, c.cond, biases, tmp, tmp.out_b.data());
  for (int64_t i = 0; i < d; ++i)
    out[i] = selector[i] * tmp.out_a[static_cast<size_t>(i)] + (1.f - selector[i]) * tmp.out_b[static_cast<size_t>(i)];
}

// One query row and head: scores over the N keys, as updates by the rows of
// the transposed keys (vectorised, no horizontal sums).
EXPNET_VECTOR_CLONES void score(const float* q, const float* keys_t, int64_t N, int64_t dk, float scale,
                                float* scores) {
  std::fill(scores, scores + N, 0.f);
  for (int64_t i = 0; i < dk; ++i) add_scaled(scores, q[i] * scale, keys_t + i * N, N);
}

// out = sum_j p[j] V[j] for one query row and head.
EXPNET_VECTOR_CLONES void mix(const float* p, const float* values, int64_t N, int64_t dk, float* out) {
  std::fill(out, out + dk, 0.f);
  for (int64_t j = 0; j < N; ++j) add_scaled(out, p[j], values + j * dk, dk);
}

bool cpu_float_contiguous(const at::Tensor& x) {
  return x.defined() && x.device().is_cpu() && x.scalar_type() == at::kFloat && x.is_contiguous();
}

}  // namespace

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
  // Scores, softmax (LibTorch's, vectorised exponentials), weighted values.
  auto scores = at::empty({rows, H, N}, q.options());
  float* score_data = scores.data_ptr<float>();
  const auto head_of = [&](int64_t task) { return (row_image[static_cast<size_t>(task / H)] * H + task % H) * N * dk; };
  at::parallel_for(0, rows * H, 1, [&](int64_t first, int64_t last) {
    for (int64_t task = first; task < last; ++task)
      score(q_data + task * dk, k_data + head_of(task), N, dk, static_cast<float>(scale), score_data + task * N);
  });
  const auto probs = at::softmax(scores, -1);
  const float* prob_data = probs.data_ptr<float>();
  at::parallel_for(0, rows * H, 1, [&](int64_t first, int64_t last) {
    for (int64_t task = first; task < last; ++task)
      mix(prob_data + task * N, v_data + head_of(task), N, dk, out_data + task * dk);
  });
  return out;
}

bool expansion_step_cpu_applies(const at::Tensor& parts, const ExpansionCaches& c) {
  for (const auto* x : {&parts, &c.cond, &c.keys, &c.class_a, &c.class_b, &c.slot_scores, &c.route_a, &c.route_b})
    if (!cpu_float_contiguous(*x)) return false;
  return true;
}

at::Tensor expansion_step_cpu(const at::Tensor& parts, const at::Tensor& slot_queries, const at::Tensor& slot_biases,
                              int64_t t, ExpansionCaches& c) {
  const auto queries = slot_queries.contiguous(), biases = slot_biases.contiguous();
  if (!expansion_step_cpu_applies(parts, c) || !cpu_float_contiguous(queries) || !cpu_float_contiguous(biases))
    throw std::invalid_argument("expansion_step_cpu: needs contiguous CPU float32 tensors");
  const int64_t rows = parts.size(0), d = c.cond.size(2), ne = queries.size(0), cap = c.cond.size(1);
  if (t < 0 || t >= cap) throw std::invalid_argument("expansion_step_cpu: position outside the caches' capacity");
  const Shapes s{d, ne, cap, t, t + 1, static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)))};
  auto out = at::empty({rows, d}, parts.options());
  // Exponentials are LibTorch's (vectorised): scalar expf would cost more than the step.
  const auto selector = at::sigmoid(parts.narrow(1, 4 * d, d)).contiguous();
  const float* part = parts.data_ptr<float>();
  const float* selector_data = selector.data_ptr<float>();
  float* out_data = out.data_ptr<float>();
  const auto row_caches = [&](int64_t r) {
    return RowCaches{c.cond.data_ptr<float>() + r * cap * d,       c.keys.data_ptr<float>() + r * cap * d,
                     c.class_a.data_ptr<float>() + r * cap * d,    c.class_b.data_ptr<float>() + r * cap * d,
                     c.slot_scores.data_ptr<float>() + r * cap * ne, c.route_a.data_ptr<float>() + r * cap * ne * cap,
                     c.route_b.data_ptr<float>() + r * cap * ne * cap};
  };
  at::parallel_for(0, rows, 1, [&](int64_t first, int64_t last) {
    Scratch tmp(s);
    for (int64_t r = first; r < last; ++r)
      step_row(s, part + r * 5 * d, selector_data + r * d, queries.data_ptr<float>(), biases.data_ptr<float>(), row_caches(r), tmp,
               out_data + r * d);
  });
  return out;
}

void gather_rows_cpu(const at::Tensor& src, const at::Tensor& dst, const std::vector<int64_t>& indices, int64_t used) {
  if (!cpu_float_contiguous(src) || !cpu_float_contiguous(dst) || src.dim() < 2 || dst.dim() != src.dim() ||
      dst.size(0) != static_cast<int64_t>(indices.size()) || used > src.size(1) || used > dst.size(1))
    throw std::invalid_argument("gather_rows_cpu: needs contiguous CPU float32 tensors of matching rows");
  for (int64_t k = 2; k < src.dim(); ++k)
    if (src.size(k) != dst.size(k)) throw std::invalid_argument("gather_rows_cpu: inner sizes differ");
  const int64_t entry = src.dim() > 2 ? src[0][0].numel() : 1;
  const int64_t src_row = src.size(1) * entry, dst_row = dst.size(1) * entry;
  const float* from = src.data_ptr<float>();
  float* to = dst.data_ptr<float>();
  at::parallel_for(0, static_cast<int64_t>(indices.size()), 1, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r)
      std::memcpy(to + r * dst_row, from + indices[static_cast<size_t>(r)] * src_row, sizeof(float) * used * entry);
  });
}

}  // namespace expnet
