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
torch::Tensor LinearImpl::forward(const torch::Tensor& x) { return few_rows_linear(x, weight, bias, *packed_weight_); }

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
