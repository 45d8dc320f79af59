// torch.nn's Linear, LayerNorm and Embedding under their parameter names.
#include "expnet/model/layers.h"

#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/torch.h>

#include <atomic>

#include "kernels/cpu/batched_product_training.h"
#include "kernels/cpu/few_rows_linear.h"

namespace expnet {

namespace {
std::atomic<bool> fused_training_kernels_on{true};

// The operand rounded to bfloat16, as float32 (exact: bfloat16 is float32's upper half).
torch::Tensor bf16_values(const torch::Tensor& t) { return t.to(torch::kBFloat16).to(torch::kFloat); }

// LibTorch's CPU bf16 autocast on a CPU without bfloat16 products (no AVX512_BF16 or
// AMX), where LibTorch 1.13 multiplies bfloat16 in scalar loops (a step took 17.7x
// float32's) and sums some layouts in bfloat16.
bool bf16_products_emulated(const torch::Tensor& x) {
  return at::autocast::is_cpu_enabled() && at::autocast::get_autocast_cpu_dtype() == at::kBFloat16 &&
         x.device().is_cpu() && (x.scalar_type() == torch::kFloat || x.scalar_type() == torch::kBFloat16) &&
         !bf16_is_fast("cpu");
}

// Runs `product` on the bfloat16-rounded operands' float32 copies with autocast off and
// rounds its result to bfloat16: a product of two bfloat16 values is exact in float32,
// so this is autocast's arithmetic (bfloat16 operands, float32 sums, bfloat16 result)
// and, through the casts' autograd, its backward's too, with float32's products.
template <typename Product>
torch::Tensor emulated_bf16_product(Product product) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  return product().to(torch::kBFloat16);
}
}  // namespace

void set_fused_training_kernels(bool on) { fused_training_kernels_on = on; }
bool fused_training_kernels() { return fused_training_kernels_on; }

torch::Tensor batched_matmul(const torch::Tensor& a, const torch::Tensor& b, bool training) {
  // Under autocast, matmul multiplies in its lower precision: LibTorch's where the CPU
  // has bfloat16 products. Without grad mode the node records no graph: a plain parallel product.
  const auto product = [training](const torch::Tensor& x, const torch::Tensor& y) {
    if (training && fused_training_kernels() && !at::autocast::is_cpu_enabled() &&
        batched_product_training_applies(x, y))
      return batched_product_training(x, y);
    return torch::matmul(x, y);
  };
  if (bf16_products_emulated(a)) return emulated_bf16_product([&] { return product(bf16_values(a), bf16_values(b)); });
  return product(a, b);
}

torch::Tensor conv2d_forward(torch::nn::Conv2dImpl& conv, const torch::Tensor& x) {
  const auto& o = conv.options;
  if (!bf16_products_emulated(x) || !c10::holds_alternative<torch::enumtype::kZeros>(o.padding_mode()))
    return conv.forward(x);
  namespace F = torch::nn::functional;
  return emulated_bf16_product([&] {
    const auto bias = conv.bias.defined() ? bf16_values(conv.bias) : conv.bias;
    return F::conv2d(bf16_values(x), bf16_values(conv.weight),
                     F::Conv2dFuncOptions()
                         .bias(bias)
                         .stride(o.stride())
                         .padding(o.padding())
                         .dilation(o.dilation())
                         .groups(o.groups()));
  });
}

LinearImpl::LinearImpl(int64_t in, int64_t out, bool with_bias)
    : in_features(in), out_features(out), packed_weight_(std::make_shared<PackedWeightCache>()) {
  weight = register_parameter("weight", torch::empty({out, in}));
  if (with_bias) bias = register_parameter("bias", torch::empty({out}));
}

// Decoding steps (a few rows, no autograd) take the kernels of few_rows_linear.h.
torch::Tensor LinearImpl::forward(const torch::Tensor& x) {
  auto y = forward_bf16_out(x);
  // Only our bf16 products give bfloat16 here; other dtypes (float16 under CUDA
  // autocast, float64) pass through as before.
  return bf16() && y.scalar_type() == torch::kBFloat16 ? y.to(torch::kFloat) : y;
}

namespace {

c10::OperatorHandle quantized_op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
}

}  // namespace

torch::Tensor LinearImpl::forward_bf16_out(const torch::Tensor& x) {
  if (bf16_products_emulated(x))
    return emulated_bf16_product(
        [&] { return torch::linear(bf16_values(x), bf16_values(weight), bias.defined() ? bf16_values(bias) : bias); });
  if (takes_bf16(x)) return torch::linear(x.to(torch::kBFloat16), weight_bf16_, bias_bf16_);
  if (takes_int8(x)) {
    static const auto linear_dynamic = quantized_op("quantized::linear_dynamic");
    torch::jit::Stack stack{x.contiguous(), int8_packed_, int8_reduce_range()};
    linear_dynamic.callBoxed(&stack);
    return stack.at(0).toTensor();
  }
  // A bf16 block's input to a product that is not bf16 after all (few rows, a stale copy).
  const auto input = bf16() && x.scalar_type() == torch::kBFloat16 ? x.to(torch::kFloat) : x;
  // A decoding step's few rows in bf16: the row kernels read the bfloat16 copy.
  if (bf16_copy_fresh(input) && few_rows_linear_bf16_applies(input, weight_bf16_))
    return few_rows_linear_bf16(input, weight_bf16_, bias);
  return few_rows_linear(input, weight, bias, *packed_weight_);
}

torch::Tensor LinearImpl::product_bf16(const torch::Tensor& x) {
  return takes_bf16(x) ? torch::linear(x.to(torch::kBFloat16), weight_bf16_) : torch::Tensor();
}

void LinearImpl::set_precision(Precision precision) {
  weight_bf16_ = bias_bf16_ = torch::Tensor();
  int8_packed_ = c10::IValue();
  weight_version_ = bias_version_ = -1;
  torch::NoGradGuard no_grad;
  if (precision == Precision::INT8) {
    if (!weight.device().is_cpu()) return;  // effective_precision says int8 is CPU-only
    use_int8_engine();
    const auto w = weight.detach().contiguous();
    // Symmetric per output channel: scale = max |w| / 127, zero point 0.
    const auto scales = w.abs().amax(1).clamp_min(1e-12).div(127.0).to(torch::kDouble);
    const auto quantized = at::quantize_per_channel(w, scales, torch::zeros({w.size(0)}, torch::kLong), 0, at::kQInt8);
    static const auto prepack = quantized_op("quantized::linear_prepack");
    torch::jit::Stack stack{quantized, bias.defined() ? c10::IValue(bias.detach().contiguous()) : c10::IValue()};
    prepack.callBoxed(&stack);
    int8_packed_ = stack.at(0);
    weight_version_ = static_cast<int64_t>(weight._version());
    if (bias.defined()) bias_version_ = static_cast<int64_t>(bias._version());
    return;
  }
  if (precision != Precision::BF16) return;
  weight_bf16_ = weight.detach().to(torch::kBFloat16).contiguous();
  weight_version_ = static_cast<int64_t>(weight._version());
  if (bias.defined()) {
    bias_bf16_ = bias.detach().to(torch::kBFloat16);
    bias_version_ = static_cast<int64_t>(bias._version());
  }
}

bool LinearImpl::weights_unchanged() const {
  return static_cast<int64_t>(weight._version()) == weight_version_ &&
         (!bias.defined() || static_cast<int64_t>(bias._version()) == bias_version_);
}

bool LinearImpl::takes_int8(const torch::Tensor& x) const {
  if (int8_packed_.isNone() || x.scalar_type() != torch::kFloat || x.dim() < 1 || !x.device().is_cpu()) return false;
  if (torch::GradMode::is_enabled() && !c10::InferenceMode::is_enabled()) return false;  // training: float32
  if (!weights_unchanged()) return false;  // changed since set_precision: the packed weights are stale
  return x.size(-1) == in_features && x.numel() / in_features >= kReducedMinRows;
}

bool LinearImpl::bf16_current() const { return weight_bf16_.defined() && weights_unchanged(); }

bool LinearImpl::bf16_copy_fresh(const torch::Tensor& x) const {
  if (!bf16_current() || x.dim() < 1) return false;  // changed since set_precision: the copy is stale
  if (x.scalar_type() != torch::kFloat && x.scalar_type() != torch::kBFloat16) return false;
  if (torch::GradMode::is_enabled() && !c10::InferenceMode::is_enabled()) return false;  // training: float32
  return x.device() == weight_bf16_.device();  // moved since set_precision: stale too
}

bool LinearImpl::takes_bf16(const torch::Tensor& x) const {
  return bf16_copy_fresh(x) && x.size(-1) == in_features && x.numel() / in_features >= kReducedMinRows;
}

LayerNormImpl::LayerNormImpl(int64_t dim_, double eps_) : dim(dim_), eps(eps_) {
  weight = register_parameter("weight", torch::ones({dim}));
  bias = register_parameter("bias", torch::zeros({dim}));
}

// Under bf16 autocast the input is bfloat16 and the weights float32: the statistics are taken in float32.
torch::Tensor LayerNormImpl::forward(const torch::Tensor& x) {
  const bool mixed = x.scalar_type() != weight.scalar_type() && weight.scalar_type() == torch::kFloat;
  return torch::layer_norm(mixed ? x.to(torch::kFloat) : x, {dim}, weight, bias, eps);
}

EmbeddingImpl::EmbeddingImpl(int64_t count, int64_t dim) {
  weight = register_parameter("weight", torch::empty({count, dim}));
}

torch::Tensor EmbeddingImpl::forward(const torch::Tensor& indices) { return torch::embedding(weight, indices); }

}  // namespace expnet
