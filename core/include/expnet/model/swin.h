// The Swin Transformer backbone as LibTorch modules, under the reference
// state_dict's names (swin_transf.*). Math: docs/expansionnet-v2.md.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>
#include <cstdint>
#include <vector>
#include "expnet/model/layers.h"
#include "expnet/model/model_config.h"

namespace expnet {

// ---------------------------------------------------------------- Swin backbone

class SwinWindowAttentionImpl : public torch::nn::Module {
 public:
  SwinWindowAttentionImpl(int64_t dim, int64_t window, int64_t heads, bool qkv_bias);
  // x: (windows*B) x w*w x C; mask: windows x w*w x w*w (0 / -100) or undefined.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask);
  // forward without the output projection (proj): the heads' outputs, (windows*B) x w*w x C.
  torch::Tensor attend(const torch::Tensor& x, const torch::Tensor& mask);
  torch::Tensor relative_position_bias();  // heads x w*w x w*w

  int64_t dim, window, heads;
  double scale;
  double attn_drop = 0, proj_drop = 0;
  torch::Tensor relative_position_bias_table;  // (2w-1)^2 x heads
  torch::Tensor relative_position_index;       // buffer, w*w x w*w int64
  Linear qkv{nullptr}, proj{nullptr};

 private:
  torch::Tensor bias_kept_;  // relative_position_bias() in inference, for the table's version
  int64_t bias_kept_version_ = -1;
  const void* bias_kept_table_ = nullptr;
};
TORCH_MODULE(SwinWindowAttention);

class SwinMlpImpl : public torch::nn::Module {
 public:
  SwinMlpImpl(int64_t dim, int64_t hidden);
  torch::Tensor forward(const torch::Tensor& x);
  // residual += forward(x) in inference (residual float32, contiguous); in
  // bf16 the biases join the GELU and the add (the engine's private Swin bf16 kernels).
  void add_to(torch::Tensor& residual, const torch::Tensor& x);
  double drop = 0;
  Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(SwinMlp);

class SwinBlockImpl : public torch::nn::Module {
 public:
  SwinBlockImpl(int64_t dim, int64_t resolution, int64_t heads, int64_t window, int64_t shift, double mlp_ratio,
                bool qkv_bias);
  torch::Tensor forward(const torch::Tensor& x);  // B x R*R x C
  torch::Tensor forward_sliced(const torch::Tensor& x);  // inference (no autograd), bounded temporaries

  int64_t dim, resolution, window, shift;
  double drop_path = 0;
  torch::Tensor attn_mask;  // buffer when shift > 0: windows x w*w x w*w
  torch::Tensor window_order;  // not a buffer: the windows' token order for the bf16 CPU kernels
  LayerNorm norm1{nullptr}, norm2{nullptr};
  SwinWindowAttention attn{nullptr};
  SwinMlp mlp{nullptr};
};
TORCH_MODULE(SwinBlock);

class SwinPatchMergingImpl : public torch::nn::Module {
 public:
  // conv: ModelConfig::swin_conv_merging (3x3 convolution, ReLU, 2x2 max pool)
  // instead of the reference's concatenation of 2x2 patches, norm and linear map.
  SwinPatchMergingImpl(int64_t resolution, int64_t dim, bool conv = false);
  torch::Tensor forward(const torch::Tensor& x);  // B x R*R x C -> B x (R/2)^2 x 2C
  int64_t resolution;
  Linear reduction{nullptr};            // reference merging
  LayerNorm norm{nullptr};              // reference merging
  torch::nn::Conv2d conv{nullptr};      // convolutional merging
};
TORCH_MODULE(SwinPatchMerging);

class SwinStageImpl : public torch::nn::Module {
 public:
  SwinStageImpl(const ModelConfig& config, int64_t stage);
  torch::Tensor forward(torch::Tensor x);
  std::vector<SwinBlock> blocks;
  SwinPatchMerging downsample{nullptr};  // absent in the last stage
};
TORCH_MODULE(SwinStage);

class SwinPatchEmbedImpl : public torch::nn::Module {
 public:
  explicit SwinPatchEmbedImpl(const ModelConfig& config);
  torch::Tensor forward(const torch::Tensor& images);  // B x C x S x S -> B x (S/p)^2 x embed
  torch::nn::Conv2d proj{nullptr};
  LayerNorm norm{nullptr};  // absent without swin_patch_norm
};
TORCH_MODULE(SwinPatchEmbed);

class SwinTransformerImpl : public torch::nn::Module {
 public:
  explicit SwinTransformerImpl(const ModelConfig& config);
  torch::Tensor forward(const torch::Tensor& images);
  void set_dropout(const DropoutRates& rates);

  ModelConfig config;
  double pos_drop = 0;
  torch::Tensor absolute_pos_embed;  // only with swin_ape
  SwinPatchEmbed patch_embed{nullptr};
  std::vector<SwinStage> layers;
  LayerNorm norm{nullptr};
};
TORCH_MODULE(SwinTransformer);

}  // namespace expnet
