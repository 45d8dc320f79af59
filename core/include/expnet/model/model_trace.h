// Optional trace outputs of the model's forward passes (expnet/model/layers.h):
// filled only when a pointer is passed, so the normal path computes nothing
// extra. Used by trace_caption (expnet/trace/trace.h, docs/traces.md).
#pragma once

#include <ATen/core/Tensor.h>

namespace expnet {

// One expansion block. Static (encoder, per image): z NE x L; forward_a/b
// NE x L (relu(+-z), rows normalised over L); backward_a/b L x NE
// (relu(+-z^T), normalised within each group's column block).
// Dynamic (decoder): z T*NE x T with the positions hidden by the causal mask
// zeroed; forward_a/b T*NE x T; backward_a/b T x T*NE (rows normalised).
// Row normalisation divides by (row sum + 1e-9): rows without a positive
// entry stay all zero. Inside the model the batch dimension comes first.
// A dynamic expansion in the encoder (encoder_layer "dynamic_expansion")
// has the decoder's shapes with every position visible.
// Layers without expansion (self-attention kinds) leave these undefined and
// fill self_attention: B x heads x T x T (softmax rows).
struct ExpansionTrace {
  at::Tensor z, forward_a, forward_b, backward_a, backward_b;
  at::Tensor self_attention;
  bool has_expansion() const { return z.defined(); }
};

// One decoder layer: its dynamic expansion (or self-attention) and the cross-attention weights
// B x heads x T x N (softmax rows).
struct DecoderLayerTrace {
  ExpansionTrace expansion;
  at::Tensor cross_attention;
};

}  // namespace expnet
