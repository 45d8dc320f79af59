// The decoder's per-step attention work on CPU float32 tensors, fused: one
// Dynamic Expansion step (a task per row) and the cross-attention of the new
// position (a task per row and head). The tensor-op versions in DecoderState
// compute the same values with some twenty small LibTorch operations (or
// batched matmuls of one row) per layer; at a step of several images their
// dispatch and temporaries cost more than the arithmetic and do not spread
// over threads. Here the tasks are split over the decoding threads
// (step_threads.h), and the exponentials are our own (vectorised, no OpenMP).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace expnet {

// The Dynamic Expansion caches of one decoder layer as the fused kernel keeps
// them: a block per position, written once when the position is fed, with the
// rows of that step. A row's history is its lineage: its entry for position u
// is row lineage[u] of block u, so beam search's reordering permutes lineages
// (integers) instead of copying caches.
struct ExpansionBlock {
  at::Tensor cond, keys, class_a, class_b;  // rows_u x d: cond_embed, key_linear, class_{a,b}_embed of x_u
  at::Tensor slot_scores;                   // rows_u x NE: Q_e . K_u
  at::Tensor route_a, route_b;              // rows_u x NE x (u+1): normalised relu(+-z[u,e,v]) over v <= u
};

// Added to the sums that normalise the expansion weights (the reference's 1e-9).
inline constexpr double kExpansionEps = 1e-9;

// w / (sum of w over the last dimension + kExpansionEps): the expansions'
// normalisation in LibTorch operations (the model, and the decoders' tensor paths).
at::Tensor normalise_expansion_rows(const at::Tensor& w);

// True when expansion_step_cpu can run: parts is a contiguous CPU float32 matrix.
bool expansion_step_cpu_applies(const at::Tensor& parts);

// Feeds position t = blocks.size(): parts (rows x 5d: cond, key, class_a,
// class_b, selector logits of the new position) become block t (row r =
// this step's row r), and the layer's output for the new position is
// returned (rows x d). Row r's lineage is lineage[r * lineage_stride + u],
// u < t. slot_queries, slot_biases: NE x d (query_exp_vectors, bias_exp_vectors).
at::Tensor expansion_step_cpu(const at::Tensor& parts, const at::Tensor& slot_queries, const at::Tensor& slot_biases,
                              std::vector<ExpansionBlock>& blocks, const int64_t* lineage, int64_t lineage_stride);

// Cross-attention of one query per row: q rows x H*dk; keys_t images x H x
// dk x N (transposed); values images x H x N x dk; row_image[r] the image of
// row r. Returns softmax(q_h K_h^T * scale) V_h per head, rows x H*dk (heads
// concatenated, as the reference).
bool cross_attention_cpu_applies(const at::Tensor& q, const at::Tensor& keys_t, const at::Tensor& values);
at::Tensor cross_attention_cpu(const at::Tensor& q, const at::Tensor& keys_t, const at::Tensor& values,
                               const std::vector<int64_t>& row_image, double scale);

// PNAIC's block step (decode/group_decoding.cpp): one decoder layer's caches of
// rows with `capacity` positions each, step-major, and their visibility.
struct BlockExpansionCaches {
  at::Tensor cond, keys, class_a, class_b;  // rows x capacity x d
  at::Tensor elem_a, elem_b;                // rows x capacity*NE x d: F[u,e] + B_e + C_u, final once u is fed
  at::Tensor visible;                       // rows x capacity, 1 for a live position (0: an ended group's)
};

// True when block_expansion_cpu can run: parts is a contiguous CPU float32 rows x P x 5d tensor.
bool block_expansion_cpu_applies(const at::Tensor& parts);

// Feeds positions first .. first+P-1 of every row at once (they see each other
// and every earlier visible position; visible[first..] must be set): writes
// their cache entries and returns the layer's output for them, rows x P x d.
at::Tensor block_expansion_cpu(const at::Tensor& parts, const at::Tensor& slot_queries, const at::Tensor& slot_biases,
                               BlockExpansionCaches& caches, int64_t first);

// torch::layer_norm over the last dimension for a few contiguous CPU float32
// rows, on the calling thread: LibTorch's splits rows over OpenMP, and a region
// for five rows of a decoding step costs more than the arithmetic.
bool layer_norm_rows_cpu_applies(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);
at::Tensor layer_norm_rows_cpu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps);

// log_softmax over the last dimension of a contiguous CPU float32 matrix
// (rows x vocabulary), rows split over the decoding threads: the decoding
// step's output, without the OpenMP region LibTorch's would start.
bool log_softmax_rows_cpu_applies(const at::Tensor& logits);
at::Tensor log_softmax_rows_cpu(const at::Tensor& logits);

}  // namespace expnet
