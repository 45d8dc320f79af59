// Incremental decoding for ExpansionNet v2: one decoding step costs one new
// position instead of the whole prefix (the reference recomputes the prefix and
// the encoder's cross-attention keys/values at every step).
//
// Per image: each decoder layer's cross-attention keys/values, computed once.
// Per row (an image's hypothesis) and decoder layer, the Dynamic Expansion
// caches of the positions fed so far, kept small: the per-position linear
// outputs (key, cond, class inputs a/b: t x d) and the normalised forward
// weights of each expanded element over the positions it sees (t*NE x t).
// The expanded queries and biases are never stored: q[u,e] = Q_e + C_u and
// b[u,e] = B_e + C_u split into a per-slot and a per-position part, and the
// forward results F[u,e] = R[u,e,:] C are folded into the backward product
// (sum_ue w[u,e] R[u,e,:]) C. A step thus reads O(t*d) per row instead of the
// O(t*NE*d) of caching F (NE = 16 in the official model).
//
// Two implementations hold those caches. On a CPU with a float32 model, fused
// kernels (core/src/kernels/cpu/step_kernels.h) keep a block per position and a lineage per
// row, so beam reordering permutes integers; elsewhere (CUDA, float64, or
// cpu_kernels=false) LibTorch operations keep row-major caches that
// reordering gathers. Both give the same results (tests run both).
//
// Rows carry no padding: every fed token is a real position (what decoding
// does). Results equal ExpansionNet::decode with causal_self_mask (1e-5).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "expnet/model/expansion_net.h"

namespace expnet {

// The Dynamic Expansion caches of one decoder layer as the fused CPU kernel
// keeps them: a block per position, written once when the position is fed,
// with the rows of that step. A row's history is its lineage: its entry for
// position u is row lineage[u] of block u, so beam search's reordering
// permutes lineages (integers) instead of copying caches.
struct ExpansionBlock {
  torch::Tensor cond, keys, class_a, class_b;  // rows_u x d: cond_embed, key_linear, class_{a,b}_embed of x_u
  torch::Tensor slot_scores;                   // rows_u x NE: Q_e . K_u
  torch::Tensor route_a, route_b;              // rows_u x NE x (u+1): normalised relu(+-z[u,e,v]) over v <= u
};

class DecoderState {
 public:
  // enc_out: images x N x d_model (ExpansionNet::encode). Starts with one row
  // per image and no positions. Computes the cross-attention keys/values.
  // cpu_kernels false: every step takes the LibTorch-operation path that any
  // device runs, even where the fused CPU kernel applies (tests compare both).
  DecoderState(ExpansionNet model, const torch::Tensor& enc_out, bool cpu_kernels = true);

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
  // The LibTorch-operation path's caches of one decoder layer, per row,
  // allocated for `capacity_` positions (grown by doubling up to T_max) so a
  // step writes its position in place; positions >= length() hold nothing yet.
  struct RowCaches {
    torch::Tensor cond, keys;        // rows x cap x d      cond_embed(x_u), key_linear(x_u)
    torch::Tensor class_a, class_b;  // rows x cap x d      class_{a,b}_embed(x_u)
    torch::Tensor slot_scores;       // rows x cap x NE     Q_e . K_u (fixed once position u exists)
    torch::Tensor route_a, route_b;  // rows x cap*NE x cap normalised relu(+-z[u,e,v]), 0 for v > u
    // Each tensor with whether it is a route (position entries NE x cap wide).
    std::vector<std::pair<torch::Tensor*, bool>> all() {
      return {{&cond, false},        {&keys, false},   {&class_a, false}, {&class_b, false},
              {&slot_scores, false}, {&route_a, true}, {&route_b, true}};
    }
  };
  struct LayerCache {
    torch::Tensor cross_keys_t;  // images x heads x d_k x N (transposed: scores are row updates)
    torch::Tensor cross_values;  // images x heads x N x d_k
    // The five linears of Dynamic Expansion that read x, in one matmul (the model keeps them).
    DynamicExpansionImpl::StackedInputs stacked_inputs;
    RowCaches rows;                      // the LibTorch-operation path's caches
    std::vector<ExpansionBlock> blocks;  // the fused CPU kernel's caches
  };
  void reserve_positions(int64_t positions);
  torch::Tensor dynamic_expansion_step(DecoderLayerImpl& layer, LayerCache& cache, const torch::Tensor& x);
  torch::Tensor dynamic_expansion_step_tensors(DecoderLayerImpl& layer, RowCaches& cache, const torch::Tensor& parts);
  torch::Tensor cross_attention_step(CrossAttentionImpl& mha, const LayerCache& cache, const torch::Tensor& q_in);

  ExpansionNet model_;
  std::vector<LayerCache> layers_;
  torch::Tensor row_image_;
  std::vector<int64_t> row_image_list_;  // row_image_ on the host (the CPU kernels read it)
  int64_t images_ = 0;
  int64_t length_ = 0;
  int64_t max_positions_ = 0;  // T_max: the model's max_seq_len
  int64_t capacity_ = 0;       // positions the row caches hold
  bool cpu_kernels_ = true;    // fused CPU kernels (CPU float32 model), else LibTorch operations
  std::vector<int64_t> lineage_;  // fused path: rows x T_max, the block row of each position fed
  // k when rows are image-major with k rows per image (row r -> image r / k):
  // cross-attention then runs per image without copying keys/values per row.
  // 0 otherwise (keys/values are gathered per row).
  int64_t rows_per_image_ = 1;
};

}  // namespace expnet
