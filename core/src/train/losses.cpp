// The XE and SCST losses on tensors (see expnet/train/losses.h).
#include "expnet/train/losses.h"

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>

namespace expnet {

torch::Tensor label_smoothing_loss(const torch::Tensor& log_probs, const torch::Tensor& targets, int64_t pad_id,
                                   double smoothing, int64_t* token_count) {
  if (log_probs.dim() != 3 || targets.dim() != 2 || log_probs.size(0) != targets.size(0) ||
      log_probs.size(1) != targets.size(1))
    throw std::invalid_argument("label_smoothing_loss: log_probs must be B x T x V and targets B x T");
  const int64_t vocab = log_probs.size(2);
  if (vocab < 2) throw std::invalid_argument("label_smoothing_loss: the vocabulary needs at least 2 words");
  const auto lp = log_probs.reshape({-1, vocab});
  const auto tgt = targets.reshape({-1}).to(torch::kLong);
  const auto keep = tgt.ne(pad_id);
  const int64_t count = keep.sum().item<int64_t>();
  if (token_count) *token_count = count;
  if (count == 0) return (log_probs.sum() * 0.0);
  const double other = smoothing / static_cast<double>(vocab - 1);
  const double confident = 1.0 - smoothing;
  // KL(q || p) = sum_j q_j log q_j - sum_j q_j log p_j; the first term is the
  // same for every position (0 * log 0 taken as 0).
  const double entropy_term = (confident > 0 ? confident * std::log(confident) : 0.0) +
                              (other > 0 ? smoothing * std::log(other) : 0.0);
  const auto lp_true = lp.gather(1, tgt.clamp(0, vocab - 1).unsqueeze(1)).squeeze(1);
  const auto lp_sum = lp.sum(1);
  const auto cross = other * (lp_sum - lp_true) + confident * lp_true;
  const auto per_position = entropy_term - cross;
  const auto total = torch::where(keep, per_position, torch::zeros_like(per_position)).sum();
  return total / static_cast<double>(count);
}

std::vector<double> scst_advantages(const std::vector<double>& rewards, int64_t samples_per_image) {
  if (samples_per_image < 2 || rewards.size() % static_cast<size_t>(samples_per_image) != 0)
    throw std::invalid_argument("scst_advantages: need >= 2 samples per image and whole groups of rewards");
  const size_t n = static_cast<size_t>(samples_per_image);
  std::vector<double> adv(rewards.size());
  for (size_t g = 0; g < rewards.size(); g += n) {
    double sum = 0;
    for (size_t k = 0; k < n; ++k) sum += rewards[g + k];
    for (size_t k = 0; k < n; ++k)
      adv[g + k] = rewards[g + k] - (sum - rewards[g + k]) / static_cast<double>(n - 1);
  }
  return adv;
}

torch::Tensor scst_policy_loss(const torch::Tensor& token_log_probs, const std::vector<double>& advantages) {
  if (token_log_probs.dim() != 2 || token_log_probs.size(0) != static_cast<int64_t>(advantages.size()))
    throw std::invalid_argument("scst_policy_loss: token_log_probs must be S x T with one advantage per sample");
  const auto adv = torch::tensor(advantages, torch::TensorOptions().dtype(torch::kDouble))
                       .to(token_log_probs.device(), token_log_probs.scalar_type());
  return (adv * -token_log_probs.sum(1)).mean();
}

}  // namespace expnet
