// Swin Transformer backbone of ExpansionNet v2 (classification head removed).
// Shapes, names and operation order follow the reference implementation so
// that reference weights give the same features (fixture tiny/: 1e-4).
#include <torch/torch.h>

#include <cmath>
#include <stdexcept>

#include "expnet/model/layers.h"
#include "expnet/model/swin.h"
#include "expnet/model/expansion_net.h"
#include "kernels/cpu/swin_bf16_kernels.h"
#include "kernels/cpu/window_attention_training.h"

namespace expnet {
namespace {

namespace F = torch::nn::functional;

// B x H x W x C -> (windows*B) x w x w x C, windows in row-major order.
torch::Tensor window_partition(const torch::Tensor& x, int64_t w) {
  const int64_t B = x.size(0), H = x.size(1), W = x.size(2), C = x.size(3);
  return x.view({B, H / w, w, W / w, w, C}).permute({0, 1, 3, 2, 4, 5}).contiguous().view({-1, w, w, C});
}

torch::Tensor window_reverse(const torch::Tensor& windows, int64_t w, int64_t H, int64_t W) {
  const int64_t B = windows.size(0) / ((H / w) * (W / w));
  return windows.view({B, H / w, W / w, w, w, -1}).permute({0, 1, 3, 2, 4, 5}).contiguous().view({B, H, W, -1});
}

// Index of the relative position (dy, dx) of every pair of window positions in
// the (2w-1)^2 bias table.
torch::Tensor make_relative_position_index(int64_t w) {
  auto index = torch::empty({w * w, w * w}, torch::kLong);
  auto acc = index.accessor<int64_t, 2>();
  for (int64_t i = 0; i < w * w; ++i)
    for (int64_t j = 0; j < w * w; ++j) {
      const int64_t dy = i / w - j / w + (w - 1), dx = i % w - j % w + (w - 1);
      acc[i][j] = dy * (2 * w - 1) + dx;
    }
  return index;
}

// After the cyclic shift, windows at the border mix regions that are not
// neighbours in the image; attention between different regions gets -100.
torch::Tensor make_shift_attention_mask(int64_t resolution, int64_t w, int64_t shift) {
  auto img_mask = torch::zeros({1, resolution, resolution, 1});
  auto acc = img_mask.accessor<float, 4>();
  const auto region = [&](int64_t p) { return p < resolution - w ? 0 : (p < resolution - shift ? 1 : 2); };
  for (int64_t h = 0; h < resolution; ++h)
    for (int64_t c = 0; c < resolution; ++c) acc[0][h][c][0] = static_cast<float>(region(h) * 3 + region(c));
  const auto mask_windows = window_partition(img_mask, w).view({-1, w * w});
  const auto diff = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2);
  return diff.masked_fill(diff != 0, -100.0).masked_fill(diff == 0, 0.0);
}

torch::Tensor apply_drop_path(const torch::Tensor& x, double rate, bool training) {
  if (!training || rate <= 0) return x;
  const double keep = 1.0 - rate;
  std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
  shape[0] = x.size(0);
  auto random = (keep + torch::rand(shape, x.options())).floor_();
  return x.div(keep) * random;
}

bool inference_only(const torch::nn::Module& module) {
  return !module.is_training() && !torch::GradMode::is_enabled();
}

// In inference the block runs in slices of windows (attention) and of tokens
// (MLP) so its largest temporaries stay near this size. Without slicing, stage
// 1 of Swin-L at 384 px holds 64 windows x 6 heads x 144 x 144 attention scores
// (32 MB, several copies) and a 9216 x 768 MLP hidden layer (28 MB): most of a
// caption's memory peak above the weights.
constexpr int64_t kSliceElements = int64_t{1} << 21;  // 8 MB of float32

int64_t largest_divisor_at_most(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, std::max<int64_t>(limit, 1)); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

}  // namespace

// ---------------------------------------------------------------- attention

SwinWindowAttentionImpl::SwinWindowAttentionImpl(int64_t dim_, int64_t window_, int64_t heads_, bool qkv_bias)
    : dim(dim_), window(window_), heads(heads_), scale(std::pow(static_cast<double>(dim_ / heads_), -0.5)) {
  relative_position_bias_table =
      register_parameter("relative_position_bias_table", torch::zeros({(2 * window - 1) * (2 * window - 1), heads}));
  relative_position_index = register_buffer("relative_position_index", make_relative_position_index(window));
  qkv = register_module("qkv", Linear(dim, dim * 3, qkv_bias));
  proj = register_module("proj", Linear(dim, dim));
}

torch::Tensor SwinWindowAttentionImpl::relative_position_bias() {
  // Without autograd the gathered bias is kept until the table changes (a
  // load bumps its version, a move its data pointer): it is the same for every
  // window group and image.
  const bool keep = !torch::GradMode::is_enabled();
  const auto version = static_cast<int64_t>(relative_position_bias_table._version());
  if (keep && bias_kept_.defined() && bias_kept_version_ == version &&
      bias_kept_table_ == relative_position_bias_table.data_ptr())
    return bias_kept_;
  const int64_t n = window * window;
  auto bias = relative_position_bias_table.index_select(0, relative_position_index.view(-1))
                  .view({n, n, -1})
                  .permute({2, 0, 1})
                  .contiguous();
  if (keep) {
    bias_kept_ = bias;
    bias_kept_version_ = version;
    bias_kept_table_ = relative_position_bias_table.data_ptr();
  }
  return bias;
}

torch::Tensor SwinWindowAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  const auto out = proj->forward_bf16_out(attend(x, mask));  // bf16 stays bf16: the block's copies move half the bytes
  return F::dropout(out, F::DropoutFuncOptions().p(proj_drop).training(is_training()));
}

torch::Tensor SwinWindowAttentionImpl::attend(const torch::Tensor& x, const torch::Tensor& mask) {
  const int64_t B_ = x.size(0), N = x.size(1), C = x.size(2);
  // In bf16 (set_precision) q, k, v and the scores stay bfloat16 as the bf16
  // products give them (converting the scores to float32 and back cost a tenth of
  // a bf16 caption: docs/performance.md, "Figures behind choices in the code");
  // our kernel adds bias and mask and takes the softmax in float32 in one pass
  // where it runs, ATen's ops otherwise.
  const bool in_place = inference_only(*this);  // no autograd: update the scores in place
  const auto bias_fp32 = relative_position_bias();
  // bf16 on a CPU that runs our kernels: the qkv bias joins the split into heads.
  torch::Tensor qkv_rows;
  if (in_place && qkv->takes_bf16(x)) {
    const auto unbiased = qkv->product_bf16(x);
    if (split_heads_bf16_applies(unbiased, heads, qkv->bias)) {
      const auto parts = split_heads_bf16(unbiased, heads, qkv->bias);
      auto scores = torch::matmul(parts.q, parts.k_transposed);
      if (window_softmax_bf16_applies(scores, bias_fp32, mask)) {
        window_softmax_bf16_(scores, bias_fp32, mask, scale);
        return torch::matmul(scores, parts.v).transpose(1, 2).reshape({B_, N, C});
      }
    }
    qkv_rows = qkv->bias.defined() ? unbiased.add(qkv->bias.to(torch::kBFloat16)) : unbiased;  // not computed twice
  } else {
    qkv_rows = qkv->forward_bf16_out(x);
  }
  // Training in float32 on the CPU: both products, the softmax and their backward in one fused node.
  if (!in_place && (attn_drop == 0 || !is_training()) && fused_training_kernels() &&
      window_attention_training_applies(qkv_rows, bias_fp32, mask, heads))
    return window_attention_training(qkv_rows, bias_fp32, mask, heads, scale);
  const auto qkv_out = qkv_rows.reshape({B_, N, 3, heads, C / heads}).permute({2, 0, 3, 1, 4});
  const auto q = qkv_out[0] * scale;
  auto attn = batched_matmul(q, qkv_out[1].transpose(-2, -1), is_training());
  // Only bf16 scores take a bf16 bias and mask (float16 ones under autocast add in float32, as before).
  const bool bf16 = attn.scalar_type() == torch::kBFloat16;
  if (in_place && bf16 && window_softmax_bf16_applies(attn, bias_fp32, mask)) {
    window_softmax_bf16_(attn, bias_fp32, mask);  // bias, mask and softmax in one pass (kernels/cpu/swin_bf16_kernels.h)
  } else {
    const auto bias = bf16 ? bias_fp32.unsqueeze(0).to(torch::kBFloat16) : bias_fp32.unsqueeze(0);
    attn = in_place ? attn.add_(bias) : attn + bias;
    if (mask.defined()) {
      const int64_t nW = mask.size(0);
      const auto grouped = attn.view({B_ / nW, nW, heads, N, N});
      const auto window_mask = bf16 ? mask.unsqueeze(1).unsqueeze(0).to(torch::kBFloat16) : mask.unsqueeze(1).unsqueeze(0);
      attn = (in_place ? grouped.add_(window_mask) : grouped + window_mask).view({-1, heads, N, N});
    }
    attn = torch::softmax(attn, -1);
  }
  attn = F::dropout(attn, F::DropoutFuncOptions().p(attn_drop).training(is_training()));
  return batched_matmul(attn, qkv_out[2], is_training()).transpose(1, 2).reshape({B_, N, C});
}

// ---------------------------------------------------------------- block

SwinMlpImpl::SwinMlpImpl(int64_t dim, int64_t hidden) {
  fc1 = register_module("fc1", Linear(dim, hidden));
  fc2 = register_module("fc2", Linear(hidden, dim));
}

torch::Tensor SwinMlpImpl::forward(const torch::Tensor& x) {
  const auto opts = F::DropoutFuncOptions().p(drop).training(is_training());
  // Exact (erf) GELU, as nn.GELU(); on bf16 rows (set_precision) our kernel where it runs.
  auto h = fc1->forward_bf16_out(x);
  if (inference_only(*this) && gelu_bf16_applies(h)) gelu_bf16_(h);  // bf16 rows in place (kernels/cpu/swin_bf16_kernels.h)
  else h = F::dropout(torch::gelu(h), opts);
  return F::dropout(fc2->forward_bf16_out(h), opts);
}

void SwinMlpImpl::add_to(torch::Tensor& residual, const torch::Tensor& x) {
  if (!inference_only(*this) || !fc1->takes_bf16(x)) {
    residual.add_(forward(x));
    return;
  }
  auto h = fc1->product_bf16(x);
  if (gelu_bf16_applies(h, fc1->bias)) gelu_bf16_(h, fc1->bias);
  else h = torch::gelu(fc1->bias.defined() ? h.add_(fc1->bias.to(h.scalar_type())) : h);
  if (!fc2->takes_bf16(h)) {
    residual.add_(fc2->forward_bf16_out(h));
    return;
  }
  const auto y = fc2->product_bf16(h);
  if (add_rows_bf16_applies(residual, y, fc2->bias)) {
    add_rows_bf16_(residual, y, fc2->bias);
    return;
  }
  residual.add_(y);
  if (fc2->bias.defined()) residual.add_(fc2->bias);
}

SwinBlockImpl::SwinBlockImpl(int64_t dim_, int64_t resolution_, int64_t heads, int64_t window_, int64_t shift_,
                             double mlp_ratio, bool qkv_bias)
    : dim(dim_), resolution(resolution_), window(window_), shift(shift_) {
  if (resolution <= window) {  // one window covers the stage: no partition, no shift
    shift = 0;
    window = resolution;
  }
  if (shift < 0 || shift >= window) throw std::invalid_argument("Swin block: shift must lie in [0, window)");
  norm1 = register_module("norm1", LayerNorm(dim));
  attn = register_module("attn", SwinWindowAttention(dim, window, heads, qkv_bias));
  norm2 = register_module("norm2", LayerNorm(dim));
  mlp = register_module("mlp", SwinMlp(dim, static_cast<int64_t>(dim * mlp_ratio)));
  if (shift > 0) attn_mask = register_buffer("attn_mask", make_shift_attention_mask(resolution, window, shift));
  if (resolution % window == 0) window_order = shifted_window_order(resolution, window, shift);
}

torch::Tensor SwinBlockImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), L = x.size(1), C = x.size(2);
  if (L != resolution * resolution)
    throw std::invalid_argument("Swin block: expected " + std::to_string(resolution * resolution) + " tokens, got " +
                                std::to_string(L));
  if (inference_only(*this)) return forward_sliced(x);
  const auto shortcut = x;
  auto h = norm1(x).view({B, resolution, resolution, C});
  if (shift > 0) h = torch::roll(h, {-shift, -shift}, {1, 2});
  auto windows = window_partition(h, window).view({-1, window * window, C});
  windows = attn(windows, attn_mask);
  h = window_reverse(windows.view({-1, window, window, C}), window, resolution, resolution);
  if (shift > 0) h = torch::roll(h, {shift, shift}, {1, 2});
  h = h.reshape({B, resolution * resolution, C});
  auto out = shortcut + apply_drop_path(h, drop_path, is_training());
  return out + apply_drop_path(mlp(norm2(out)), drop_path, is_training());
}

namespace {

// A LayerNorm whose output feeds bf16 products: written as bfloat16 in the
// same pass where the kernel runs (kernels/cpu/swin_bf16_kernels.h).
torch::Tensor norm_to_bf16(LayerNorm& norm, const torch::Tensor& x) {
  if (layer_norm_to_bf16_applies(x, norm->weight, norm->bias))
    return layer_norm_to_bf16(x, norm->weight, norm->bias, norm->eps);
  return norm(x).to(torch::kBFloat16);
}

}  // namespace

// The same computation as forward() without autograd, in slices (see
// kSliceElements): windows in groups that divide the windows of one image (so
// each group takes its slice of the shift mask), MLP rows in chunks.
torch::Tensor SwinBlockImpl::forward_sliced(const torch::Tensor& x) {
  const int64_t B = x.size(0), C = x.size(2), N = window * window;
  // In bf16 the attention branch (shift, windows, products) runs on bfloat16;
  // the residual stream and the LayerNorms stay float32. Where our kernels run,
  // shift and partition are one gather of token rows and their reverse one
  // scattered residual add (kernels/cpu/swin_bf16_kernels.h).
  const bool bf16 = attn->qkv->bf16(), token_order = bf16 && window_tokens_apply(x, window_order);
  torch::Tensor windows;
  if (token_order) {
    windows = gather_tokens_bf16(norm_to_bf16(norm1, x), window_order).view({-1, N, C});
  } else {
    auto h = (bf16 ? norm_to_bf16(norm1, x) : norm1(x)).view({B, resolution, resolution, C});
    if (shift > 0) h = torch::roll(h, {-shift, -shift}, {1, 2});
    windows = window_partition(h, window).view({-1, N, C});
  }
  const int64_t total = windows.size(0), per_image = total / B;
  const int64_t group = largest_divisor_at_most(per_image, kSliceElements / (attn->heads * N * N));
  // With the token order in bf16 the projection's bias joins the scattered add.
  const bool proj_bias_later = token_order && attn->proj->takes_bf16(windows.narrow(0, 0, group));
  const auto attend = [&](const torch::Tensor& part, const torch::Tensor& mask) {
    return proj_bias_later ? attn->proj->product_bf16(attn->attend(part, mask)) : attn(part, mask);
  };
  torch::Tensor attended;
  if (group == total) {
    attended = attend(windows, attn_mask);
  } else {
    attended = torch::empty_like(windows);
    for (int64_t first = 0; first < total; first += group) {
      const auto mask = attn_mask.defined() ? attn_mask.narrow(0, first % per_image, group) : torch::Tensor();
      attended.narrow(0, first, group).copy_(attend(windows.narrow(0, first, group), mask));
    }
  }
  torch::Tensor out;
  if (proj_bias_later || (token_order && attended.scalar_type() == torch::kBFloat16)) {
    out = add_scattered_tokens(x, attended.view({B, resolution * resolution, C}), window_order,
                               proj_bias_later ? attn->proj->bias : torch::Tensor());
  } else {
    auto h = window_reverse(attended.view({-1, window, window, C}), window, resolution, resolution);
    if (shift > 0) h = torch::roll(h, {shift, shift}, {1, 2});
    out = x + h.reshape({B, resolution * resolution, C});
  }
  const auto rows = out.view({-1, C});
  const int64_t chunk = std::max<int64_t>(1, kSliceElements / mlp->fc1->out_features);
  for (int64_t first = 0; first < rows.size(0); first += chunk) {
    auto part = rows.narrow(0, first, std::min(chunk, rows.size(0) - first));
    mlp->add_to(part, mlp->fc1->bf16() ? norm_to_bf16(norm2, part) : norm2(part));
  }
  return out;
}

// ---------------------------------------------------------------- stage

SwinPatchMergingImpl::SwinPatchMergingImpl(int64_t resolution_, int64_t dim, bool conv_merging)
    : resolution(resolution_) {
  if (conv_merging) {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(dim, 2 * dim, 3).padding(1)));
    return;
  }
  reduction = register_module("reduction", Linear(4 * dim, 2 * dim, false));
  norm = register_module("norm", LayerNorm(4 * dim));
}

torch::Tensor SwinPatchMergingImpl::forward(const torch::Tensor& x) {
  using torch::indexing::None;
  using torch::indexing::Slice;
  const int64_t B = x.size(0), C = x.size(2);
  if (conv) {
    const auto image = x.transpose(1, 2).reshape({B, C, resolution, resolution});
    const auto pooled = torch::max_pool2d(torch::relu(conv2d_forward(*conv, image)), 2);
    return pooled.flatten(2).transpose(1, 2).contiguous();
  }
  const auto grid = x.view({B, resolution, resolution, C});
  const auto x0 = grid.index({Slice(), Slice(0, None, 2), Slice(0, None, 2)});
  const auto x1 = grid.index({Slice(), Slice(1, None, 2), Slice(0, None, 2)});
  const auto x2 = grid.index({Slice(), Slice(0, None, 2), Slice(1, None, 2)});
  const auto x3 = grid.index({Slice(), Slice(1, None, 2), Slice(1, None, 2)});
  const auto merged = torch::cat({x0, x1, x2, x3}, -1).view({B, -1, 4 * C});
  return reduction(norm(merged));
}

SwinStageImpl::SwinStageImpl(const ModelConfig& config, int64_t stage) {
  const int64_t dim = config.stage_dim(stage), res = config.stage_resolution(stage);
  auto list = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.swin_depths[stage]; ++i) {
    SwinBlock block(dim, res, config.swin_num_heads[stage], config.swin_window_size,
                    i % 2 == 0 ? 0 : config.swin_window_size / 2, config.swin_mlp_ratio, config.swin_qkv_bias);
    list->push_back(block);
    blocks.push_back(block);
  }
  if (stage + 1 < config.num_stages())
    downsample = register_module("downsample", SwinPatchMerging(res, dim, config.swin_conv_merging));
}

torch::Tensor SwinStageImpl::forward(torch::Tensor x) {
  for (auto& block : blocks) x = block(x);
  if (downsample) x = downsample(x);
  return x;
}

// ---------------------------------------------------------------- whole backbone

SwinPatchEmbedImpl::SwinPatchEmbedImpl(const ModelConfig& config) {
  proj = register_module("proj", torch::nn::Conv2d(torch::nn::Conv2dOptions(config.swin_in_chans, config.swin_embed_dim,
                                                                            config.swin_patch_size)
                                                       .stride(config.swin_patch_size)));
  if (config.swin_patch_norm)
    norm = register_module("norm",
                           LayerNorm(config.swin_embed_dim));
}

torch::Tensor SwinPatchEmbedImpl::forward(const torch::Tensor& images) {
  auto x = conv2d_forward(*proj, images).flatten(2).transpose(1, 2);
  return norm ? norm(x) : x;
}

SwinTransformerImpl::SwinTransformerImpl(const ModelConfig& config_) : config(config_) {
  config.validate();
  patch_embed = register_module("patch_embed", SwinPatchEmbed(config));
  if (config.swin_ape) {
    const int64_t n = config.patches_resolution() * config.patches_resolution();
    absolute_pos_embed = register_parameter("absolute_pos_embed", torch::zeros({1, n, config.swin_embed_dim}));
  }
  auto list = register_module("layers", torch::nn::ModuleList());
  for (int64_t s = 0; s < config.num_stages(); ++s) {
    SwinStage stage(config, s);
    list->push_back(stage);
    layers.push_back(stage);
  }
  norm = register_module(
      "norm", LayerNorm(config.stage_dim(config.num_stages() - 1)));
}

torch::Tensor SwinTransformerImpl::forward(const torch::Tensor& images) {
  const int64_t S = config.swin_img_size;
  if (images.dim() != 4 || images.size(1) != config.swin_in_chans || images.size(2) != S || images.size(3) != S) {
    std::string got;
    for (const auto s : images.sizes()) got += (got.empty() ? "" : "x") + std::to_string(s);
    throw std::invalid_argument("backbone: expected images of shape B x " + std::to_string(config.swin_in_chans) +
                                " x " + std::to_string(S) + " x " + std::to_string(S) + ", got " + got);
  }
  auto x = patch_embed(images);
  if (absolute_pos_embed.defined()) x = x + absolute_pos_embed;
  x = F::dropout(x, F::DropoutFuncOptions().p(pos_drop).training(is_training()));
  for (size_t s = 0; s < layers.size(); ++s) {
    RECORD_USER_SCOPE("expnet::backbone.layers." + std::to_string(s));
    x = layers[s](x);
  }
  return norm(x);
}

void SwinTransformerImpl::set_dropout(const DropoutRates& rates) {
  pos_drop = rates.swin_drop;
  int64_t total = 0;
  for (const auto d : config.swin_depths) total += d;
  int64_t index = 0;
  for (auto& stage : layers)
    for (auto& block : stage->blocks) {
      // torch.linspace(0, rate, total): the stochastic depth decay rule
      block->drop_path = total > 1 ? rates.swin_drop_path * static_cast<double>(index) / (total - 1) : 0.0;
      block->attn->attn_drop = rates.swin_attn_drop;
      block->attn->proj_drop = rates.swin_drop;
      block->mlp->drop = rates.swin_drop;
      ++index;
    }
}

}  // namespace expnet
