// See window_attention_training.h. Per task (window b, head h), rows i, j < N:
// s_ij = scale * q_i . k_j + bias_hij + mask_ij, p_i = softmax(s_i), o_i = sum_j p_ij v_j;
// backward: dp_ij = do_i . v_j, ds_ij = p_ij (dp_ij - sum_j' p_ij' dp_ij'),
// dq_i = scale sum_j ds_ij k_j, dk_j = scale sum_i ds_ij q_i, dv_j = sum_i p_ij do_i,
// dbias_h = sum over windows of ds.
#include "kernels/cpu/window_attention_training.h"

#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/small_product.h"
#include "kernels/cpu/vector_math.h"

namespace expnet {
namespace {

using namespace vector_math;
using small_product::product;
using small_product::transpose;

struct Geometry {
  int64_t B = 0, N = 0, H = 0, D = 0, C = 0, M = 0;  // M = 0: no mask
  float scale = 1.f;
  int64_t row() const { return 3 * C; }  // floats per token in qkv
};

Geometry geometry_of(const at::Tensor& qkv, const at::Tensor& mask, int64_t heads, double scale) {
  Geometry g;
  g.B = qkv.size(0);
  g.N = qkv.size(1);
  g.C = qkv.size(2) / 3;
  g.H = heads;
  g.D = g.C / heads;
  g.M = mask.defined() ? mask.size(0) : 0;
  g.scale = static_cast<float>(scale);
  return g;
}

// Tasks of a few windows each: a window's work is microseconds.
constexpr int64_t kGrain = 4;

// Transposed k or v with their columns padded to whole vectors (zeros), so the
// products over tokens run without a scalar tail; their results go to `wide`.
struct TaskScratch {
  int64_t padded;                                        // N rounded up to 16
  std::vector<float> transposed, wide, ds, flipped;  // D x padded, N x padded, N x N (two)
  explicit TaskScratch(const Geometry& g)
      : padded((g.N + 15) / 16 * 16),
        transposed(static_cast<size_t>(g.D * padded), 0.f),
        wide(static_cast<size_t>(g.N * padded)),
        ds(static_cast<size_t>(g.N * g.N)),
        flipped(static_cast<size_t>(g.N * g.N)) {}
  // columns `at` .. at+D-1 of the window's N token rows, as D x padded
  const float* transpose_tokens(const Geometry& g, const float* tokens, int64_t at) {
    transpose(g.N, g.D, tokens + at, g.row(), transposed.data(), padded);
    return transposed.data();
  }
};

// Task (b, h): its probabilities (N x N, row-major) into p, its output rows into out.
EXPNET_VECTOR_CLONES void forward_task(const Geometry& g, int64_t b, int64_t h, const float* qkv, const float* bias,
                                       const float* mask, float* p, float* out, TaskScratch& scratch) {
  const float* tokens = qkv + b * g.N * g.row();
  const float* bias_h = bias + h * g.N * g.N;
  const float* mask_b = g.M > 0 ? mask + (b % g.M) * g.N * g.N : nullptr;
  const int64_t q_at = h * g.D, k_at = g.C + h * g.D, v_at = 2 * g.C + h * g.D;
  const float* kt = scratch.transpose_tokens(g, tokens, k_at);
  float* wide = scratch.wide.data();
  product(g.N, g.D, scratch.padded, tokens + q_at, g.row(), kt, scratch.padded, wide, scratch.padded, g.scale);
  for (int64_t i = 0; i < g.N; ++i) {
    float* s = p + i * g.N;
    for (int64_t j = 0; j < g.N; ++j) s[j] = wide[i * scratch.padded + j] + bias_h[i * g.N + j];  // scale q.k + bias
    if (mask_b)
      for (int64_t j = 0; j < g.N; ++j) s[j] += mask_b[i * g.N + j];
    softmax_in_place(s, g.N);
  }
  product(g.N, g.N, g.D, p, g.N, tokens + v_at, g.row(), out + b * g.N * g.C + h * g.D, g.C);  // p v
}

// Task (b, h) of backward: its columns of grad_qkv (every row of the window),
// and ds into grad_scores when the bias wants a gradient.
EXPNET_VECTOR_CLONES void backward_task(const Geometry& g, int64_t b, int64_t h, const float* qkv, const float* p,
                                        const float* grad_out, float* grad_qkv, float* grad_scores,
                                        TaskScratch& scratch) {
  const float* tokens = qkv + b * g.N * g.row();
  const float* go = grad_out + b * g.N * g.C + h * g.D;
  float* grads = grad_qkv + b * g.N * g.row();
  const int64_t q_at = h * g.D, k_at = g.C + h * g.D, v_at = 2 * g.C + h * g.D;
  float* ds = scratch.ds.data();
  float* flipped = scratch.flipped.data();
  const float* vt = scratch.transpose_tokens(g, tokens, v_at);
  float* wide = scratch.wide.data();
  product(g.N, g.D, scratch.padded, go, g.C, vt, scratch.padded, wide, scratch.padded);  // dp = do v^T
  for (int64_t i = 0; i < g.N; ++i) {
    const float* p_i = p + i * g.N;
    const float* dp = wide + i * scratch.padded;
    float weighted = 0.f;
    for (int64_t j = 0; j < g.N; ++j) weighted += p_i[j] * dp[j];
    for (int64_t j = 0; j < g.N; ++j) ds[i * g.N + j] = p_i[j] * (dp[j] - weighted);
  }
  if (grad_scores) std::copy_n(ds, g.N * g.N, grad_scores);
  transpose(g.N, g.N, p, g.N, flipped, g.N);
  product(g.N, g.N, g.D, flipped, g.N, go, g.C, grads + v_at, g.row());                     // dv = p^T do
  product(g.N, g.N, g.D, ds, g.N, tokens + k_at, g.row(), grads + q_at, g.row(), g.scale);  // dq = scale ds k
  transpose(g.N, g.N, ds, g.N, flipped, g.N);
  product(g.N, g.N, g.D, flipped, g.N, tokens + q_at, g.row(), grads + k_at, g.row(), g.scale);  // dk = scale ds^T q
}

struct WindowAttention : torch::autograd::Function<WindowAttention> {
  // The mask goes as an optional: LibTorch 1.13's custom functions refuse an undefined tensor argument.
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& qkv_in, const at::Tensor& bias_in,
                            const c10::optional<at::Tensor>& mask_or_none, int64_t heads, double scale) {
    const at::Tensor mask_in = mask_or_none.value_or(at::Tensor());
    const Geometry g = geometry_of(qkv_in, mask_in, heads, scale);
    const auto qkv = qkv_in.contiguous();
    const auto bias = bias_in.contiguous();
    const auto mask = mask_in.defined() ? mask_in.contiguous() : mask_in;
    auto probs = at::empty({g.B, g.H, g.N, g.N}, qkv.options());
    auto out = at::empty({g.B, g.N, g.C}, qkv.options());
    const float* qkv_data = qkv.data_ptr<float>();
    const float* bias_data = bias.data_ptr<float>();
    const float* mask_data = mask.defined() ? mask.data_ptr<float>() : nullptr;
    float* probs_data = probs.data_ptr<float>();
    float* out_data = out.data_ptr<float>();
    at::parallel_for(0, g.B * g.H, kGrain, [&](int64_t first, int64_t last) {
      TaskScratch scratch(g);
      for (int64_t t = first; t < last; ++t)
        forward_task(g, t / g.H, t % g.H, qkv_data, bias_data, mask_data, probs_data + t * g.N * g.N, out_data,
                     scratch);
    });
    ctx->save_for_backward({qkv, probs});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["windows"] = g.M;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& qkv = saved[0];
    const auto& probs = saved[1];
    Geometry g;
    g.B = qkv.size(0);
    g.N = qkv.size(1);
    g.C = qkv.size(2) / 3;
    g.H = ctx->saved_data["heads"].toInt();
    g.D = g.C / g.H;
    g.M = ctx->saved_data["windows"].toInt();
    g.scale = static_cast<float>(ctx->saved_data["scale"].toDouble());
    const auto grad_out = grads[0].contiguous();
    auto grad_qkv = at::empty_like(qkv);
    const bool bias_grad = ctx->needs_input_grad(1);
    at::Tensor grad_scores = bias_grad ? at::empty({g.B, g.H, g.N, g.N}, qkv.options()) : at::Tensor();
    const float* qkv_data = qkv.data_ptr<float>();
    const float* probs_data = probs.data_ptr<float>();
    const float* grad_out_data = grad_out.data_ptr<float>();
    float* grad_qkv_data = grad_qkv.data_ptr<float>();
    float* scores_data = bias_grad ? grad_scores.data_ptr<float>() : nullptr;
    at::parallel_for(0, g.B * g.H, kGrain, [&](int64_t first, int64_t last) {
      TaskScratch scratch(g);
      for (int64_t t = first; t < last; ++t)
        backward_task(g, t / g.H, t % g.H, qkv_data, probs_data + t * g.N * g.N, grad_out_data, grad_qkv_data,
                      scores_data ? scores_data + t * g.N * g.N : nullptr, scratch);
    });
    return {grad_qkv, bias_grad ? grad_scores.sum(0) : at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

bool float_cpu(const at::Tensor& t) { return t.defined() && t.device().is_cpu() && t.scalar_type() == at::kFloat; }

}  // namespace

bool window_attention_training_applies(const at::Tensor& qkv, const at::Tensor& bias, const at::Tensor& mask,
                                       int64_t heads) {
  if (!float_cpu(qkv) || !float_cpu(bias) || qkv.dim() != 3 || bias.dim() != 3 || heads < 1) return false;
  const int64_t B = qkv.size(0), N = qkv.size(1), C3 = qkv.size(2);
  if (B < 1 || N < 1 || C3 % (3 * heads) != 0 || C3 == 0) return false;
  if (bias.size(0) != heads || bias.size(1) != N || bias.size(2) != N) return false;
  if (!mask.defined()) return true;
  return float_cpu(mask) && mask.dim() == 3 && mask.size(0) >= 1 && B % mask.size(0) == 0 && mask.size(1) == N &&
         mask.size(2) == N && !mask.requires_grad();
}

at::Tensor window_attention_training(const at::Tensor& qkv, const at::Tensor& bias, const at::Tensor& mask,
                                     int64_t heads, double scale) {
  return WindowAttention::apply(qkv, bias, mask.defined() ? c10::optional<at::Tensor>(mask) : c10::nullopt, heads,
                                scale);
}

}  // namespace expnet
