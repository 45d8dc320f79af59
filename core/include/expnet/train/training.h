// Training building blocks as ../shared/docs/expansionnet-v2.md ("Training")
// states them: RAdam in Liu et al.'s original form, the reference learning-rate
// schedule (plus linear warm-up and fixed rates), cross-entropy with label
// smoothing, and the SCST (self-critical) loss with the CIDEr-D reward.
// See docs/training.md.
#pragma once

#include <torch/optim/optimizer.h>
#include <torch/optim/serialize.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace expnet {

class CiderDReward;
class ExpansionNetImpl;

// ---------------------------------------------------------------- RAdam

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

// ---------------------------------------------------------------- schedules

enum class LrScheduleKind { reference, linear_warmup, fixed };

// Learning rate per iteration (the scheduler steps once per micro-batch).
//  reference:     max([it >= W] * min_lr, lr / max(W - it, 1) * a^floor(it / (B*k)))
//  linear_warmup: max([it >= W] * min_lr, lr * min(1, (it+1)/W) * a^floor(it / (B*k)))
//  fixed:         lr
// with W = warmup, B = batches_per_epoch, k = anneal_every_epochs, a = anneal_factor.
struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::reference;
  double lr = 2e-4;
  int64_t warmup = 0;
  double anneal_factor = 1.0;
  int64_t anneal_every_epochs = 1;
  int64_t batches_per_epoch = 1;
  double min_lr = 5e-7;

  double rate(int64_t it) const;
};
LrScheduleKind parse_lr_schedule_kind(const std::string& name);  // throws std::invalid_argument
std::string to_string(LrScheduleKind kind);

// ---------------------------------------------------------------- losses

// Cross-entropy with label smoothing as the reference: the target distribution
// puts 1 - s on the true word and s / (V - 1) on every other column (PAD and
// SOS included); loss = sum over non-pad target positions of
// KL(target || exp(log_probs)) divided by the number of non-pad targets.
// log_probs: B x T x V; targets: B x T (int64). Returns a scalar; `token_count`
// (optional) receives the divisor. With no non-pad target the loss is 0.
torch::Tensor label_smoothing_loss(const torch::Tensor& log_probs, const torch::Tensor& targets, int64_t pad_id,
                                   double smoothing = 0.1, int64_t* token_count = nullptr);

// SCST baseline: for rewards grouped per image (samples_per_image consecutive
// entries), each sample's advantage is r - mean(rewards of the other samples
// of the same image).
std::vector<double> scst_advantages(const std::vector<double>& rewards, int64_t samples_per_image);

// loss = mean over samples of advantage * -(sum of token log-probs). token_log_probs:
// S x T, already zero after each sample's EOS (see scst_sample).
torch::Tensor scst_policy_loss(const torch::Tensor& token_log_probs, const std::vector<double>& advantages);

struct ScstOptions {
  int64_t samples_per_image = 5;
  int64_t max_len = 20;  // sampled words after SOS (EOS included)
  int64_t sos_id = 0, eos_id = 0, pad_id = 0;
};

struct ScstSamples {
  torch::Tensor tokens;           // S x L sampled ids after SOS, pad_id after EOS (S = B * samples)
  torch::Tensor token_log_probs;  // S x L log p of each sampled id, 0 after EOS (with grad)
  std::vector<std::vector<int64_t>> ids;  // per sample: ids up to and including the first EOS
};

// Draws samples_per_image captions per image from the full softmax with the
// model as it is (call model.train() for the reference's dropout-on sampling),
// recomputing the decoder over the prefix each step as the reference does but
// without a graph; the drawn words are then scored with gradients in one
// teacher-forced pass (token_log_probs).
// features: B x N x final_swin_dim backbone output. Uses the global generator.
ScstSamples scst_sample(ExpansionNetImpl& model, const torch::Tensor& features, const ScstOptions& options);

struct ScstStepResult {
  torch::Tensor loss;            // scalar, with grad
  std::vector<double> rewards;   // per sample
  double mean_reward = 0;
};

// One SCST objective evaluation: sample, score with CIDEr-D (EOS appended,
// set_vocabulary() must have been called on `reward`), leave-one-out baseline,
// policy loss. image_indices[b] = training image index of row b in `reward`.
ScstStepResult scst_loss(ExpansionNetImpl& model, const torch::Tensor& features,
                         const std::vector<size_t>& image_indices, const CiderDReward& reward,
                         const ScstOptions& options);

}  // namespace expnet
