// torch.nn's Linear, LayerNorm and Embedding under their parameter names, and
// the training-time dropout rates of the whole model.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <cstdint>
#include <memory>

#include "expnet/model/precision.h"

namespace torch::nn {
class Conv2dImpl;
}  // namespace torch::nn

namespace expnet {

// Training in float32 on the CPU runs our fused kernels where they apply (Swin's
// window attention, dropout, batched products); off, LibTorch's operators
// run there, for comparisons (`expnet bench train --unfused`). Process-wide, on by default.
void set_fused_training_kernels(bool on);
bool fused_training_kernels();

// torch::matmul(a, b), the model's products. For batched matrices (the same rank, at
// least 3, and batch sizes) of a module in training mode, in float32 on the CPU without
// autocast and with the fused kernels on, forward and backward each run as one parallel
// pass of our own (SCST's drawing, without a graph, too); in eval mode LibTorch's.
// Under CPU bf16 autocast where the CPU has no bfloat16 products (bf16_is_fast("cpu")
// false), this, Linear and conv2d_forward multiply the bfloat16-rounded operands in
// float32: autocast's arithmetic with float32's products (docs/training.md, "Precision").
torch::Tensor batched_matmul(const torch::Tensor& a, const torch::Tensor& b, bool training);

// conv->forward(x), except under CPU bf16 autocast where the CPU has no bfloat16 products:
// there on the bfloat16-rounded operands in float32, as batched_matmul (zero padding).
torch::Tensor conv2d_forward(torch::nn::Conv2dImpl& conv, const torch::Tensor& x);

class PackedWeightCache;  // the decoding kernels' packed weight (private to core/src)

// Training-time dropout rates; all 0 by default (inference). They only act in
// train() mode. Captioner rates follow the reference's drop_args; the Swin
// drop-path rate rises linearly from 0 over the blocks to swin_drop_path.
struct DropoutRates {
  double enc = 0, dec = 0, enc_input = 0, dec_input = 0, other = 0;
  double swin_drop = 0, swin_attn_drop = 0, swin_drop_path = 0;
};

// ---------------------------------------------------------------- basic layers

// Linear, LayerNorm and Embedding with torch.nn's parameter names and maths.
// Unlike LibTorch's, their weights are allocated but not initialised: the
// model's reset_parameters() (the reference initialisation) or a checkpoint
// load fills them, so building the 234M-parameter model for loading costs no
// random-number time and touches no memory twice.
class LinearImpl : public torch::nn::Module {
 public:
  LinearImpl(int64_t in_features, int64_t out_features, bool with_bias = true);
  // x float32 or bfloat16; the output is float32.
  torch::Tensor forward(const torch::Tensor& x);
  // As forward, but a bf16 product's output stays bfloat16, for the next bf16
  // product to take without a conversion (float32 when the product was not bf16).
  torch::Tensor forward_bf16_out(const torch::Tensor& x);
  // x W^T as bfloat16 without the bias, for a caller that adds the bias in a
  // pass of its own (the Swin MLP's GELU, the residual adds), when the product
  // runs in bf16 (forward_bf16_out's bf16 case); undefined otherwise.
  torch::Tensor product_bf16(const torch::Tensor& x);
  // bf16: keeps a bfloat16 copy of the weights (made now) for inference products
  // of at least kReducedMinRows rows (oneDNN) and for decoding steps of a few rows
  // (few_rows_linear_bf16); the output stays float32. int8: the weights
  // quantised per output channel and packed for LibTorch's dynamic quantised
  // Linear (CPU), same rows. fp32 frees them. Weights changed after this (a
  // load, training) are noticed: the product then runs in float32 until
  // set_precision is called again.
  void set_precision(Precision precision);
  bool bf16() const { return weight_bf16_.defined(); }
  // bf16() and the weights unchanged since set_precision (the copy is current).
  bool bf16_current() const;
  int64_t in_features, out_features;
  torch::Tensor weight;  // out x in
  torch::Tensor bias;    // out, or undefined

  // Below this (bf16 and int8), oneDNN's set-up costs more than it saves.
  static constexpr int64_t kReducedMinRows = 64;
  // A product of x runs in bf16 (oneDNN): product_bf16(x) is defined.
  bool takes_bf16(const torch::Tensor& x) const;

 private:
  // The bfloat16 copy may serve x: inference, x on its device, the copy current.
  bool bf16_copy_fresh(const torch::Tensor& x) const;
  // The weight laid out for decoding steps of several images, made on first use.
  std::shared_ptr<PackedWeightCache> packed_weight_;
  bool takes_int8(const torch::Tensor& x) const;
  // The weight and bias versions are those set_precision copied or packed.
  bool weights_unchanged() const;
  torch::Tensor weight_bf16_, bias_bf16_;  // undefined but in bf16
  c10::IValue int8_packed_;                // None but in int8
  int64_t weight_version_ = -1, bias_version_ = -1;
};
TORCH_MODULE(Linear);

class LayerNormImpl : public torch::nn::Module {
 public:
  explicit LayerNormImpl(int64_t dim, double eps = 1e-5);  // weight 1, bias 0 (cheap: 1-D)
  torch::Tensor forward(const torch::Tensor& x);
  int64_t dim;
  double eps;
  torch::Tensor weight, bias;
};
TORCH_MODULE(LayerNorm);

class EmbeddingImpl : public torch::nn::Module {
 public:
  EmbeddingImpl(int64_t count, int64_t dim);
  torch::Tensor forward(const torch::Tensor& indices);
  torch::Tensor weight;  // count x dim
};
TORCH_MODULE(Embedding);

}  // namespace expnet
