// RAdam, learning-rate schedules and the XE / SCST losses (see expnet/train/training.h).
#include "expnet/train/training.h"

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>

#include "expnet/metrics/cider_reward.h"
#include "expnet/model/expansion_net.h"

namespace expnet {

// ---------------------------------------------------------------- RAdam

void RAdamOptions::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(betas);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(eps);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
}

void RAdamOptions::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(betas_t, betas);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, eps);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
}

void RAdamParamState::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(step);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg_sq);
}

void RAdamParamState::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(int64_t, step);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg_sq);
}

RAdam::RAdam(std::vector<torch::optim::OptimizerParamGroup> param_groups, RAdamOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<RAdamOptions>(defaults)) {
  const auto [beta1, beta2] = defaults.betas();
  if (defaults.lr() < 0 || defaults.eps() < 0 || defaults.weight_decay() < 0 || beta1 < 0 || beta1 >= 1 ||
      beta2 < 0 || beta2 >= 1)
    throw std::invalid_argument("RAdam: lr, eps and weight_decay must be >= 0 and betas in [0, 1)");
}

RAdamStepFactors radam_step_factors(int64_t step, double beta1, double beta2) {
  RAdamStepFactors f;
  const double t = static_cast<double>(step);
  const double beta2_t = std::pow(beta2, t);
  const double rho_inf = 2.0 / (1.0 - beta2) - 1.0;
  f.rho_t = rho_inf - 2.0 * t * beta2_t / (1.0 - beta2_t);
  if (f.rho_t >= 5.0)
    f.step_size = std::sqrt((1.0 - beta2_t) * (f.rho_t - 4.0) / (rho_inf - 4.0) * (f.rho_t - 2.0) / f.rho_t *
                            rho_inf / (rho_inf - 2.0)) /
                  (1.0 - std::pow(beta1, t));
  return f;
}

torch::Tensor RAdam::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss = {};
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const RAdamOptions&>(group.options());
    const auto [beta1, beta2] = options.betas();
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const auto& grad = p.grad();
      auto key = c10::guts::to_string(p.unsafeGetTensorImpl());
      auto it = state_.find(key);
      if (it == state_.end()) {
        auto fresh = std::make_unique<RAdamParamState>();
        fresh->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
        it = state_.emplace(key, std::move(fresh)).first;
      }
      auto& state = static_cast<RAdamParamState&>(*it->second);
      state.exp_avg_sq().mul_(beta2).addcmul_(grad, grad, 1.0 - beta2);
      state.exp_avg().mul_(beta1).add_(grad, 1.0 - beta1);
      state.step(state.step() + 1);
      const auto factors = radam_step_factors(state.step(), beta1, beta2);
      if (factors.step_size < 0) continue;  // rho_t < 5: Liu et al. make no update
      if (options.weight_decay() != 0) p.add_(p, -options.weight_decay() * options.lr());
      const auto denom = state.exp_avg_sq().sqrt().add_(options.eps());
      p.addcdiv_(state.exp_avg(), denom, -factors.step_size * options.lr());
    }
  }
  return loss;
}

// State by parameter position (group g, parameter i), which survives a new
// process: LibTorch's own archive keys state by tensor address and does not
// restore group options.
void RAdam::save(torch::serialize::OutputArchive& archive) const {
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    const auto prefix = "group" + std::to_string(g);
    archive.write(prefix + ".lr", c10::IValue(param_groups_[g].options().get_lr()));
    const auto& params = param_groups_[g].params();
    for (size_t i = 0; i < params.size(); ++i) {
      const auto it = state_.find(c10::guts::to_string(params[i].unsafeGetTensorImpl()));
      if (it == state_.end()) continue;
      const auto& st = static_cast<const RAdamParamState&>(*it->second);
      const auto key = prefix + ".p" + std::to_string(i);
      archive.write(key + ".step", torch::tensor(st.step(), torch::kLong));
      archive.write(key + ".exp_avg", st.exp_avg());
      archive.write(key + ".exp_avg_sq", st.exp_avg_sq());
    }
  }
}

void RAdam::load(torch::serialize::InputArchive& archive) {
  state_.clear();
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    const auto prefix = "group" + std::to_string(g);
    c10::IValue lr;
    if (archive.try_read(prefix + ".lr", lr)) param_groups_[g].options().set_lr(lr.toDouble());
    const auto& params = param_groups_[g].params();
    for (size_t i = 0; i < params.size(); ++i) {
      const auto key = prefix + ".p" + std::to_string(i);
      torch::Tensor step, exp_avg, exp_avg_sq;
      if (!archive.try_read(key + ".step", step)) continue;
      archive.read(key + ".exp_avg", exp_avg);
      archive.read(key + ".exp_avg_sq", exp_avg_sq);
      if (!exp_avg.sizes().equals(params[i].sizes()))
        throw std::runtime_error("optimizer state does not match the model (parameter " + std::to_string(i) + ")");
      auto st = std::make_unique<RAdamParamState>();
      st->step(step.item<int64_t>());
      st->exp_avg(exp_avg.to(params[i].device()));
      st->exp_avg_sq(exp_avg_sq.to(params[i].device()));
      state_[c10::guts::to_string(params[i].unsafeGetTensorImpl())] = std::move(st);
    }
  }
}

// ---------------------------------------------------------------- schedules

double LrSchedule::rate(int64_t it) const {
  if (kind == LrScheduleKind::fixed) return lr;
  const int64_t per_anneal = std::max<int64_t>(1, batches_per_epoch * std::max<int64_t>(1, anneal_every_epochs));
  const double anneal = std::pow(anneal_factor, static_cast<double>(it / per_anneal));
  double warm;
  if (kind == LrScheduleKind::reference)
    warm = lr / static_cast<double>(std::max<int64_t>(warmup - it, 1));
  else
    warm = warmup > 0 ? lr * std::min(1.0, static_cast<double>(it + 1) / static_cast<double>(warmup)) : lr;
  const double floor_lr = it >= warmup ? min_lr : 0.0;
  return std::max(floor_lr, warm * anneal);
}

LrScheduleKind parse_lr_schedule_kind(const std::string& name) {
  if (name == "reference") return LrScheduleKind::reference;
  if (name == "linear" || name == "linear_warmup") return LrScheduleKind::linear_warmup;
  if (name == "fixed") return LrScheduleKind::fixed;
  throw std::invalid_argument("unknown learning-rate schedule '" + name + "' (use reference, linear or fixed)");
}

std::string to_string(LrScheduleKind kind) {
  switch (kind) {
    case LrScheduleKind::reference: return "reference";
    case LrScheduleKind::linear_warmup: return "linear";
    case LrScheduleKind::fixed: return "fixed";
  }
  return "reference";
}

// ---------------------------------------------------------------- losses

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

ScstSamples scst_sample(ExpansionNetImpl& model, const torch::Tensor& features, const ScstOptions& options) {
  const int64_t batch = features.size(0);
  const int64_t rows = batch * options.samples_per_image;
  const auto enc = model.encode(features).repeat_interleave(options.samples_per_image, 0);
  const auto long_opts = torch::TensorOptions().dtype(torch::kLong).device(features.device());
  auto prefix = torch::full({rows, 1}, options.sos_id, long_opts);
  auto finished = torch::zeros({rows}, long_opts.dtype(torch::kBool));
  std::vector<torch::Tensor> step_tokens, step_alive;
  {
    // Drawing needs no graph: building one per step over the whole prefix and
    // back-propagating through all of them costs O(L^2) decoder passes backward.
    torch::NoGradGuard no_grad;
    const auto enc_values = enc.detach();
    for (int64_t t = 0; t < options.max_len; ++t) {
      // The prefix keeps the sampled words after EOS: the causal mask keeps them
      // from affecting earlier positions, and they are replaced by PAD below.
      const auto log_probs = model.decode(enc_values, prefix, causal_self_mask(prefix, -1)).select(1, t);
      const auto sampled = torch::multinomial(log_probs.exp(), 1).squeeze(1);
      step_tokens.push_back(torch::where(finished, torch::full_like(sampled, options.pad_id), sampled));
      step_alive.push_back(finished.logical_not());
      finished = finished.logical_or(sampled.eq(options.eos_id));
      prefix = torch::cat({prefix, sampled.unsqueeze(1)}, 1);
      if (finished.all().item<bool>()) break;
    }
  }
  ScstSamples out;
  out.tokens = torch::stack(step_tokens, 1);
  // One teacher-forced pass with gradients scores every drawn word: under the
  // causal mask position t sees exactly the prefix it was drawn from (dropout
  // draws fresh masks, as every step of the reference's loop does).
  const auto input = torch::cat({torch::full({rows, 1}, options.sos_id, long_opts), out.tokens.narrow(1, 0, out.tokens.size(1) - 1)}, 1);
  const auto log_probs = model.decode(enc, input, causal_self_mask(input, -1));
  const auto drawn = out.tokens.clamp_min(0);
  const auto lp = log_probs.gather(2, drawn.unsqueeze(2)).squeeze(2);
  // Words up to and including the first EOS count; the PAD after it does not.
  out.token_log_probs = torch::where(torch::stack(step_alive, 1), lp, torch::zeros_like(lp));
  const auto cpu = out.tokens.cpu();
  const auto acc = cpu.accessor<int64_t, 2>();
  out.ids.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t t = 0; t < cpu.size(1); ++t) {
      out.ids[static_cast<size_t>(r)].push_back(acc[r][t]);
      if (acc[r][t] == options.eos_id) break;
    }
  return out;
}

ScstStepResult scst_loss(ExpansionNetImpl& model, const torch::Tensor& features,
                         const std::vector<size_t>& image_indices, const CiderDReward& reward,
                         const ScstOptions& options) {
  if (static_cast<int64_t>(image_indices.size()) != features.size(0))
    throw std::invalid_argument("scst_loss: one training image index per feature row is needed");
  auto samples = scst_sample(model, features, options);
  std::vector<size_t> per_sample_image;
  for (size_t idx : image_indices)
    for (int64_t k = 0; k < options.samples_per_image; ++k) per_sample_image.push_back(idx);
  ScstStepResult result;
  result.rewards = reward.score_ids(per_sample_image, samples.ids);
  double sum = 0;
  for (double r : result.rewards) sum += r;
  result.mean_reward = result.rewards.empty() ? 0.0 : sum / static_cast<double>(result.rewards.size());
  result.loss = scst_policy_loss(samples.token_log_probs, scst_advantages(result.rewards, options.samples_per_image));
  return result;
}

}  // namespace expnet
