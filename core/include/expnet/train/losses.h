// The training losses of docs/expansionnet-v2.md ("Training") on
// tensors: cross-entropy with label smoothing (XE) and the self-critical policy
// loss with its leave-one-out baseline (SCST). The objectives that run the
// model around them: expnet/train/train_steps.h. See docs/training.md.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace expnet {

// Cross-entropy with label smoothing as the reference: the target distribution
// puts 1 - s on the true word and s / (V - 1) on every other column (PAD and
// SOS included); loss = sum over non-pad target positions of
// KL(target || exp(log_probs)) divided by the number of non-pad targets.
// log_probs: B x T x V; targets: B x T (int64). Returns a scalar; `token_count`
// (optional) receives the divisor. With no non-pad target the loss is 0.
at::Tensor label_smoothing_loss(const at::Tensor& log_probs, const at::Tensor& targets, int64_t pad_id,
                                double smoothing = 0.1, int64_t* token_count = nullptr);

// SCST baseline: for rewards grouped per image (samples_per_image consecutive
// entries), each sample's advantage is r - mean(rewards of the other samples
// of the same image).
std::vector<double> scst_advantages(const std::vector<double>& rewards, int64_t samples_per_image);

// loss = mean over samples of advantage * -(sum of token log-probs). token_log_probs:
// S x T, already zero after each sample's EOS (see scst_sample).
at::Tensor scst_policy_loss(const at::Tensor& token_log_probs, const std::vector<double>& advantages);

}  // namespace expnet
