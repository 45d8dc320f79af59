// Multi-head self-attention for the ablation layer kinds (ModelConfig's
// encoder_layer / decoder_layer, docs/model.md "Layer kinds"): the base
// Transformer's, and NG-SAN's normalised (NSA) and geometry-aware (GSA)
// self-attention over the backbone's grid of cells.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <cstdint>

#include "expnet/model/layers.h"

namespace expnet {

// A decoding state's keys and values of the positions fed so far, for one
// self-attention layer: rows x heads x t x d_k each (undefined before the first).
struct KeyValueCache {
  torch::Tensor keys, values;
  void reorder(const torch::Tensor& parents);  // new row i continues old row parents[i]
};

// NG-SAN's relative geometry of the cells of a side x side grid over the image
// (cell (r, c): centre ((c + 0.5) / side, (r + 0.5) / side), width = height =
// 1 / side), row-major as the backbone's tokens: N x N x 4 with N = side^2 and
//   f_ij = [log max(|x_i - x_j| / w_i, 1e-3), log max(|y_i - y_j| / h_i, 1e-3),
//           log(w_i / w_j), log(h_i / h_j)]
// (the floor keeps a cell's distance to itself finite).
torch::Tensor grid_relative_geometry(int64_t side, const torch::TensorOptions& options = {});

// NSA: the queries normalised per image and channel over the sequence
// (instance normalisation, eps 1e-5), then scaled and shifted: q: B x T x d,
// weight and bias: d.
torch::Tensor instance_normalise_queries(const torch::Tensor& q, const torch::Tensor& weight,
                                         const torch::Tensor& bias);

class SelfAttentionImpl : public torch::nn::Module {
 public:
  struct Options {
    bool normalise_queries = false;  // NSA
    int64_t geometry_grid = 0;       // GSA over a grid of this side (0: none)
  };
  SelfAttentionImpl(int64_t d_model, int64_t heads, Options options);
  // x: B x T x d; mask: B x T x T (nonzero = visible) or undefined (all visible).
  // weights, when given, receives the attention weights B x heads x T x T.
  // Scores: (q_i . k_j + q_i . G_ij) / sqrt(d_k), G_ij = relu(geometry_embed(f_ij))
  // per head with GSA (NG-SAN's query-dependent geometric bias), without: q_i . k_j / sqrt(d_k).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask, torch::Tensor* weights = nullptr);
  // One decoding step of a causal (decoder) layer: x rows x 1 x d, its key and
  // value appended to `cache`, attending every cached position; equals forward
  // with the causal mask at that position. Not for NSA or GSA, whose queries or
  // biases depend on the whole sequence.
  torch::Tensor step(const torch::Tensor& x, KeyValueCache& cache);

  int64_t d_model, heads, d_k;
  Options options;
  Linear Wq{nullptr}, Wk{nullptr}, Wv{nullptr}, out_linear{nullptr};
  torch::Tensor query_norm_weight, query_norm_bias;  // NSA's scale and shift (d), else undefined
  Linear geometry_embed{nullptr};                    // GSA: 4 -> d (d_k per head), else null

 private:
  torch::Tensor split_heads(const torch::Tensor& x) const;  // B x T x d -> B x heads x T x d_k
};
TORCH_MODULE(SelfAttention);

}  // namespace expnet
