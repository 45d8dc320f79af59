// Partially non-autoregressive captioning (PNAIC, docs/pnaic-method.md) on
// ExpansionNet v2: a caption is K word groups decoded in parallel. The decoder
// input is K groups of Lg steps, flattened group-major (column g * Lg + t holds
// step t of group g); step 0 of every group is SOS. The embedding adds, to the
// AIC one, a learned vector per group index (ExpansionNetImpl::pnaic_group_embed),
// and the decoder's self-mask becomes step-causal. With K = 1 both reduce to
// AIC's, so one decoder serves both (docs/pnaic.md).
#pragma once

#include <torch/types.h>

#include <cstdint>

#include "expnet/model/expansion_net.h"

namespace expnet {

// Step and group index of each of the T = K * Lg columns (T long ids each).
// Throws std::invalid_argument when T is not a multiple of K.
struct GroupLayout {
  torch::Tensor positions;  // column -> step t inside its group
  torch::Tensor groups;     // column -> group index
};
GroupLayout group_layout(int64_t columns, int64_t groups, const torch::Device& device);

// The step-causal self-mask: M[b, (i,t), (j,u)] = 1 iff u <= t (any group j) and
// neither (i,t) nor (j,u) is padding (pad_id < 0: no padding). tokens: B x K*Lg
// group-major. With K = 1 it equals causal_self_mask. B x T x T bool.
torch::Tensor step_causal_mask(const torch::Tensor& tokens, int64_t groups, int64_t pad_id);

// Starts a PNAIC model from an AIC one (the distillation teacher): every
// parameter of `aic` whose name and shape `pnaic` shares is copied, the
// decoder's only when with_decoder; the word embedding and vocabulary
// projection (the student's vocabulary is the teacher's plus DEL as its last
// id) are copied row by row for the teacher's ids. The group embedding and
// DEL's rows keep `pnaic`'s initialisation. Returns how many tensors were copied.
// Throws std::invalid_argument naming the first mismatch (configs other than
// pnaic_groups, or vocabulary sizes other than V and V + 1).
int64_t init_pnaic_from_aic(ExpansionNetImpl& pnaic, ExpansionNetImpl& aic, bool with_decoder);

}  // namespace expnet
