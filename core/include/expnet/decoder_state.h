// Incremental decoding for ExpansionNet v2: one decoding step costs one new
// position instead of the whole prefix (the reference recomputes the prefix and
// the encoder's cross-attention keys/values at every step).
//
// Per image: each decoder layer's cross-attention keys/values, computed once.
// Per row (an image's hypothesis) and decoder layer, the Dynamic Expansion
// caches of the positions fed so far: the expanded queries q[u,e], the keys,
// the class embeddings of the inputs and the forward results plus biases
// (F[u,e] + b[u,e]). Everything for position t depends only on positions <= t;
// the backward step of a new position t normalises over all visible elements
// (u,e), u <= t, which needs only the new key against the cached queries.
//
// Rows carry no padding: every fed token is a real position (what decoding
// does). Results equal ExpansionNet::decode with causal_self_mask (1e-5).
#pragma once

#include <cstdint>

#include "expnet/model.h"

namespace expnet {

class DecoderState {
 public:
  // enc_out: images x N x d_model (ExpansionNet::encode). Starts with one row
  // per image and no positions. Computes the cross-attention keys/values.
  DecoderState(ExpansionNet model, const torch::Tensor& enc_out);

  // Feeds one token per row (rows int64 ids) at position length() and returns
  // the log-probabilities of the next token, rows x V.
  torch::Tensor step(const torch::Tensor& tokens);
  // As step(), but returns the decoder output before the vocabulary
  // projection (rows x d_model).
  torch::Tensor step_hidden(const torch::Tensor& tokens);

  // New row i continues old row indices[i] (beam search: the chosen parents;
  // also expands, e.g. {0,0,0,1,1,1} for 2 images x 3 beams). Every cache
  // follows; the rows' images follow too.
  void reorder(const torch::Tensor& indices);

  int64_t length() const { return length_; }   // positions fed so far
  int64_t rows() const { return row_image_.size(0); }
  int64_t images() const { return images_; }
  const torch::Tensor& row_image() const { return row_image_; }  // rows: image of each row

 private:
  struct LayerCache {
    torch::Tensor cross_keys, cross_values;  // images x heads x N x d_k
    torch::Tensor queries;                   // rows x t*NE x d   q[u,e]
    torch::Tensor keys;                      // rows x t x d      key_linear(x_u)
    torch::Tensor class_a, class_b;          // rows x t x d      class_{a,b}_embed(x_u)
    torch::Tensor forward_a, forward_b;      // rows x t*NE x d   F[u,e] + b[u,e]
  };
  torch::Tensor dynamic_expansion_step(DecoderLayerImpl& layer, LayerCache& cache, const torch::Tensor& x);
  torch::Tensor cross_attention_step(CrossAttentionImpl& mha, const LayerCache& cache, const torch::Tensor& q_in);

  ExpansionNet model_;
  std::vector<LayerCache> layers_;
  torch::Tensor row_image_;
  int64_t images_ = 0;
  int64_t length_ = 0;
  // k when rows are image-major with k rows per image (row r -> image r / k):
  // cross-attention then runs per image without copying keys/values per row.
  // 0 otherwise (keys/values are gathered per row).
  int64_t rows_per_image_ = 1;
};

}  // namespace expnet
