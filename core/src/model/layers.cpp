// torch.nn's Linear, LayerNorm and Embedding under their parameter names.
#include "expnet/model/layers.h"

#include <torch/torch.h>

#include "kernels/cpu/few_rows_linear.h"

namespace expnet {

LinearImpl::LinearImpl(int64_t in, int64_t out, bool with_bias)
    : in_features(in), out_features(out), packed_weight_(std::make_shared<PackedWeightCache>()) {
  weight = register_parameter("weight", torch::empty({out, in}));
  if (with_bias) bias = register_parameter("bias", torch::empty({out}));
}

// Decoding steps (a few rows, no autograd) take the kernels of few_rows_linear.h.
torch::Tensor LinearImpl::forward(const torch::Tensor& x) { return forward_bf16_out(x).to(torch::kFloat); }

torch::Tensor LinearImpl::forward_bf16_out(const torch::Tensor& x) {
  if (takes_bf16(x)) return torch::linear(x.to(torch::kBFloat16), weight_bf16_, bias_bf16_);
  if (x.scalar_type() == torch::kBFloat16) return few_rows_linear(x.to(torch::kFloat), weight, bias, *packed_weight_);
  return few_rows_linear(x, weight, bias, *packed_weight_);
}

void LinearImpl::set_precision(Precision precision) {
  weight_bf16_ = bias_bf16_ = torch::Tensor();
  weight_version_ = bias_version_ = -1;
  if (precision != Precision::BF16) return;
  torch::NoGradGuard no_grad;
  weight_bf16_ = weight.detach().to(torch::kBFloat16).contiguous();
  weight_version_ = static_cast<int64_t>(weight._version());
  if (bias.defined()) {
    bias_bf16_ = bias.detach().to(torch::kBFloat16);
    bias_version_ = static_cast<int64_t>(bias._version());
  }
}

bool LinearImpl::takes_bf16(const torch::Tensor& x) const {
  if (!weight_bf16_.defined() || x.dim() < 1) return false;
  if (x.scalar_type() != torch::kFloat && x.scalar_type() != torch::kBFloat16) return false;
  if (torch::GradMode::is_enabled() && !c10::InferenceMode::is_enabled()) return false;  // training: float32
  if (x.device() != weight_bf16_.device() || static_cast<int64_t>(weight._version()) != weight_version_ ||
      (bias.defined() && static_cast<int64_t>(bias._version()) != bias_version_))
    return false;  // moved or changed since set_precision: the copy is stale
  return x.size(-1) == in_features && x.numel() / in_features >= kBf16MinRows;
}

LayerNormImpl::LayerNormImpl(int64_t dim_, double eps_) : dim(dim_), eps(eps_) {
  weight = register_parameter("weight", torch::ones({dim}));
  bias = register_parameter("bias", torch::zeros({dim}));
}

torch::Tensor LayerNormImpl::forward(const torch::Tensor& x) { return torch::layer_norm(x, {dim}, weight, bias, eps); }

EmbeddingImpl::EmbeddingImpl(int64_t count, int64_t dim) {
  weight = register_parameter("weight", torch::empty({count, dim}));
}

torch::Tensor EmbeddingImpl::forward(const torch::Tensor& indices) { return torch::embedding(weight, indices); }

}  // namespace expnet
