// Incremental decoding for ExpansionNet v2: one decoding step costs one new
// position instead of the whole prefix (the reference recomputes the prefix and
// the encoder's cross-attention keys/values at every step).
//
// A state holds, per image, each decoder layer's cross-attention keys/values,
// computed once; and per row (an image's hypothesis) and layer, the Dynamic
// Expansion caches (a self-attention decoder: keys and values) of the
// positions fed so far. How those caches are laid out
// depends on where the model runs, and is private to one implementation per
// path (core/src/decode/): fused CPU kernels for a float32 model on the CPU,
// LibTorch operations elsewhere (CUDA, float64, or cpu_kernels = false). Both
// give the same results (the tests run both); what is cached and why it is
// exact: docs/decoding.md.
//
// Rows carry no padding: every fed token is a real position (what decoding
// does). Results equal ExpansionNet::decode with causal_self_mask (1e-5).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "expnet/model/expansion_net.h"

namespace expnet {

class StepCaches;  // one implementation per device path (core/src/decode/step_caches.h)

// Which rows belong to which image, as both cache paths read it.
struct RowImages {
  int64_t images = 0;
  torch::Tensor row_image;            // rows: image of each row, on the model's device
  std::vector<int64_t> on_host;       // the same, on the host
  // k when rows are image-major with k rows per image (row r -> image r / k):
  // cross-attention then runs per image without copying keys/values per row.
  // 0 otherwise (keys/values are gathered per row).
  int64_t rows_per_image = 1;
};

// A decoder layer's cross-attention keys/values for every image, and the five
// linears of its Dynamic Expansion that read x, stacked in one matmul (none
// for a self-attention decoder, whose keys/values per row are a KeyValueCache).
struct CrossAttentionCache {
  torch::Tensor keys_t;  // images x heads x d_k x N (transposed: scores are row updates)
  torch::Tensor values;  // images x heads x N x d_k
  DynamicExpansionImpl::StackedInputs stacked_inputs;
};

class DecoderState {
 public:
  // enc_out: images x N x d_model (ExpansionNet::encode). Starts with one row
  // per image and no positions. Computes the cross-attention keys/values.
  // cpu_kernels false: every step takes the LibTorch-operation path that any
  // device runs, even where the fused CPU kernels apply (tests compare both).
  DecoderState(ExpansionNet model, const torch::Tensor& enc_out, bool cpu_kernels = true);
  ~DecoderState();
  DecoderState(DecoderState&&) noexcept;
  DecoderState& operator=(DecoderState&&) noexcept;

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

  int64_t length() const { return length_; }  // positions fed so far
  int64_t rows() const { return rows_.row_image.size(0); }
  int64_t images() const { return rows_.images; }
  const torch::Tensor& row_image() const { return rows_.row_image; }  // rows: image of each row

 private:
  ExpansionNet model_;
  std::vector<CrossAttentionCache> layers_;
  std::vector<KeyValueCache> self_attention_;  // per layer, for decoder_layer "self_attention"
  std::unique_ptr<StepCaches> caches_;
  RowImages rows_;
  int64_t length_ = 0;
};

}  // namespace expnet
