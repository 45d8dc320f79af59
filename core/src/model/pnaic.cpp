// PNAIC's group layout and step-causal mask, and the start of a PNAIC model
// from its AIC teacher.
#include "expnet/model/pnaic.h"

#include <torch/torch.h>

#include <stdexcept>
#include <string>

namespace expnet {

GroupLayout group_layout(int64_t columns, int64_t groups, const torch::Device& device) {
  if (groups < 1) throw std::invalid_argument("PNAIC: the group count must be at least 1, got " + std::to_string(groups));
  if (columns % groups != 0)
    throw std::invalid_argument("PNAIC: " + std::to_string(columns) + " decoder columns are not " +
                                std::to_string(groups) + " groups of equal length");
  const int64_t steps = columns / groups;
  const auto column = torch::arange(columns, torch::TensorOptions().dtype(torch::kLong).device(device));
  return {column.remainder(steps), column.div(steps, "floor")};
}

torch::Tensor step_causal_mask(const torch::Tensor& tokens, int64_t groups, int64_t pad_id) {
  if (tokens.dim() != 2) throw std::invalid_argument("step_causal_mask: expected tokens B x K*Lg");
  const int64_t B = tokens.size(0), T = tokens.size(1);
  const auto step = group_layout(T, groups, tokens.device()).positions;
  auto visible = step.unsqueeze(0).le(step.unsqueeze(1)).unsqueeze(0).expand({B, T, T});  // [t][u]: u <= t
  if (pad_id < 0) return visible.contiguous();
  const auto real = tokens != pad_id;
  return visible.logical_and(real.unsqueeze(1)).logical_and(real.unsqueeze(2));
}

int64_t init_pnaic_from_aic(ExpansionNetImpl& pnaic, ExpansionNetImpl& aic, bool with_decoder) {
  auto expected = pnaic.config();
  expected.pnaic_groups = 0;
  if (!pnaic.config().is_pnaic() || aic.config().is_pnaic())
    throw std::invalid_argument("PNAIC initialisation: needs a PNAIC student and an AIC teacher");
  if (expected != aic.config())
    throw std::invalid_argument("PNAIC initialisation: the student's model config differs from the teacher's "
                                "beyond pnaic_groups (use the teacher's config with pnaic_groups added)");
  const int64_t V = aic.vocab_size();
  if (pnaic.vocab_size() != V && pnaic.vocab_size() != V + 1)
    throw std::invalid_argument("PNAIC initialisation: the student's vocabulary has " +
                                std::to_string(pnaic.vocab_size()) + " words, the teacher's " + std::to_string(V) +
                                " (expected the teacher's plus DEL)");
  torch::NoGradGuard no_grad;
  const auto teacher = aic.named_parameters(/*recurse=*/true);
  int64_t copied = 0;
  for (auto& item : pnaic.named_parameters(/*recurse=*/true)) {
    const auto& name = item.key();
    const bool decoder_side = name.rfind("decoders.", 0) == 0 || name.rfind("dec_reduce_", 0) == 0 ||
                              name.rfind("out_embedder.", 0) == 0 || name.rfind("pos_encoder.", 0) == 0 ||
                              name.rfind("vocab_linear.", 0) == 0;
    if (decoder_side && !with_decoder) continue;
    const auto* source = teacher.find(name);
    if (!source) continue;  // the group embedding
    auto& target = item.value();
    if (target.sizes() == source->sizes()) {
      target.copy_(*source);
    } else if (target.dim() >= 1 && source->dim() == target.dim() && target.size(0) == source->size(0) + 1) {
      target.narrow(0, 0, source->size(0)).copy_(*source);  // vocabulary rows: DEL keeps its own
    } else {
      throw std::invalid_argument("PNAIC initialisation: parameter '" + name + "' has different shapes");
    }
    ++copied;
  }
  return copied;
}

}  // namespace expnet
