// RAdam in Liu et al.'s original form, as docs/expansionnet-v2.md
// ("Training") states it: the reference's optimiser. See docs/training.md.
#pragma once

#include <torch/optim/optimizer.h>
#include <torch/optim/serialize.h>

#include <cstdint>
#include <tuple>
#include <vector>

namespace expnet {

struct RAdamOptions : public torch::optim::OptimizerCloneableOptions<RAdamOptions> {
  RAdamOptions(double lr = 1e-4) : lr_(lr) {}
  TORCH_ARG(double, lr) = 1e-4;
  typedef std::tuple<double, double> betas_t;
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.98);
  TORCH_ARG(double, eps) = 1e-9;
  TORCH_ARG(double, weight_decay) = 0;

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

struct RAdamParamState : public torch::optim::OptimizerCloneableParamState<RAdamParamState> {
  TORCH_ARG(int64_t, step) = 0;
  TORCH_ARG(torch::Tensor, exp_avg);
  TORCH_ARG(torch::Tensor, exp_avg_sq);

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
};

// Liu et al.'s RAdam (the reference's optims/radam.py with
// degenerated_to_sgd=False): the moments are updated every step, but the
// parameters only move once the SMA length rho_t reaches 5 (from step 6 at
// beta2 0.98); then p -= lr * r_t * sqrt(1-b2^t)/(1-b1^t) * m / (sqrt(v) + eps).
// Decoupled from the reference only in that state is kept per parameter.
class RAdam : public torch::optim::Optimizer {
 public:
  explicit RAdam(std::vector<torch::optim::OptimizerParamGroup> param_groups, RAdamOptions defaults = {});
  explicit RAdam(std::vector<torch::Tensor> params, RAdamOptions defaults = {})
      : RAdam({torch::optim::OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}

  torch::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;
};

// The SMA length rho_t and the step-size factor sqrt(1-b2^t) * r_t / (1-b1^t)
// of Liu et al.; step_size < 0 means "no update" (rho_t < 5).
struct RAdamStepFactors {
  double rho_t = 0;
  double step_size = -1;
};
RAdamStepFactors radam_step_factors(int64_t step, double beta1, double beta2);

// torch::nn::utils::clip_grad_norm_ (L2) through multi-tensor operators: the norms of
// all gradients in one _foreach_norm and their scaling in one _foreach_mul_ (one kernel
// each on CUDA, not two per parameter), the same arithmetic on the CPU. Returns the
// norm before clipping; parameters without a gradient are skipped.
double clip_gradient_norm(const std::vector<torch::Tensor>& params, double max_norm);
// Every gradient divided by `divisor` (float16 autocast's loss scale) in one
// _foreach_div_; parameters without a gradient are skipped.
void divide_gradients(const std::vector<torch::Tensor>& params, double divisor);

}  // namespace expnet
