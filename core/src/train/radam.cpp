// RAdam in Liu et al.'s form (see expnet/train/radam.h).
#include "expnet/train/radam.h"

#include <torch/torch.h>

#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>
#include <type_traits>

namespace expnet {

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

namespace {

// LibTorch keys an optimizer's state by the parameter's TensorImpl: its address
// as a string in 1.13 (c10::guts::to_string), the pointer itself in 2.x.
template <class Key>
Key state_key_of(const at::Tensor& p) {
  const void* impl = p.unsafeGetTensorImpl();
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream address;
    address << impl;
    return address.str();
  } else {
    return const_cast<void*>(impl);
  }
}

}  // namespace

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

// All parameters of a group that share a step count move together through LibTorch's
// multi-tensor (_foreach_) operators: on CUDA each is one fused kernel over the whole
// list instead of seven small kernels per parameter (the loop was a quarter of the
// shapes-demo model's GPU step, docs/performance.md); on the CPU they run the same
// per-tensor operators as a loop would, in the same order, so the arithmetic is unchanged.
torch::Tensor RAdam::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss = {};
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  struct SameStep {
    std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs;
  };
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const RAdamOptions&>(group.options());
    const auto [beta1, beta2] = options.betas();
    std::map<int64_t, SameStep> by_step;  // the step each parameter is about to take
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto key = state_key_of<std::decay_t<decltype(state_)>::key_type>(p);
      auto it = state_.find(key);
      if (it == state_.end()) {
        auto fresh = std::make_unique<RAdamParamState>();
        fresh->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
        it = state_.emplace(key, std::move(fresh)).first;
      }
      auto& state = static_cast<RAdamParamState&>(*it->second);
      state.step(state.step() + 1);
      SameStep& same = by_step[state.step()];
      same.params.push_back(p);
      same.grads.push_back(p.grad());
      same.exp_avgs.push_back(state.exp_avg());
      same.exp_avg_sqs.push_back(state.exp_avg_sq());
    }
    for (auto& [step, same] : by_step) {
      at::_foreach_mul_(same.exp_avg_sqs, beta2);
      at::_foreach_addcmul_(same.exp_avg_sqs, same.grads, same.grads, 1.0 - beta2);
      at::_foreach_mul_(same.exp_avgs, beta1);
      at::_foreach_add_(same.exp_avgs, same.grads, 1.0 - beta1);
      const auto factors = radam_step_factors(step, beta1, beta2);
      if (factors.step_size < 0) continue;  // rho_t < 5: Liu et al. make no update
      if (options.weight_decay() != 0)
        at::_foreach_add_(same.params, same.params, -options.weight_decay() * options.lr());
      auto denominators = at::_foreach_sqrt(same.exp_avg_sqs);
      at::_foreach_add_(denominators, options.eps());
      at::_foreach_addcdiv_(same.params, same.exp_avgs, denominators, -factors.step_size * options.lr());
    }
  }
  return loss;
}

namespace {
std::vector<at::Tensor> defined_gradients(const std::vector<torch::Tensor>& params) {
  std::vector<at::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  return grads;
}
}  // namespace

void divide_gradients(const std::vector<torch::Tensor>& params, double divisor) {
  torch::NoGradGuard no_grad;
  auto grads = defined_gradients(params);
  if (!grads.empty()) at::_foreach_div_(grads, divisor);  // LibTorch's _foreach_ operators refuse an empty list
}

double clip_gradient_norm(const std::vector<torch::Tensor>& params, double max_norm) {
  torch::NoGradGuard no_grad;
  const auto grads = defined_gradients(params);
  if (grads.empty()) return 0.0;
  const auto norms = at::_foreach_norm(grads, 2);
  const at::Tensor total = norms.size() == 1 ? norms[0] : torch::stack(norms).norm(2);
  // As LibTorch computes it: in the gradients' dtype, clamped to at most 1.
  const double coefficient = torch::clamp(max_norm / (total + 1e-6), c10::nullopt, 1.0).item<double>();
  at::_foreach_mul_(grads, coefficient);
  return total.item<double>();
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
      const auto it = state_.find(state_key_of<std::decay_t<decltype(state_)>::key_type>(params[i]));
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
      state_[state_key_of<std::decay_t<decltype(state_)>::key_type>(params[i])] = std::move(st);
    }
  }
}

}  // namespace expnet
