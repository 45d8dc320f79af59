// One training step's objective on the model, per objective: cross-entropy
// (xe_step) and self-critical sequence training (scst_step). The trainer
// (expnet/train/trainer.h), the training benchmark (expnet/train/train_bench.h)
// and `expnet bench frozen-epoch` call these; each step returns the loss, and
// backward and the optimizer update stay with the caller (accumulation,
// all-reduce and the NaN guard are the trainer's). See docs/training.md.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "expnet/train/pnaic_targets.h"

namespace expnet {

class CiderDReward;
class ExpansionNetImpl;
struct Batch;

// The parameters a stage trains: all of them, or all but the Swin backbone's
// when it is frozen; requires_grad is set to match.
std::vector<at::Tensor> trainable_parameters(ExpansionNetImpl& model, bool frozen_backbone);

// ---------------------------------------------------------------- XE

struct XeStepOptions {
  int64_t pad_id = 0;
  double smoothing = 0.1;
  // The batch holds whole images, each with all its captions (batch_unit
  // "image"): each image's encoding serves all its caption rows.
  bool image_wise = false;
  // Called between the captioner's forward pass and the loss: the benchmark
  // times the two apart.
  std::function<void()> forward_done;
};

struct XeStepResult {
  at::Tensor loss;            // scalar, with grad
  int64_t target_tokens = 0;  // its divisor: the batch's non-pad target tokens
};

// The teacher-forced captioner (encoder, decoder) over the batch's captions on
// the backbone `features` (one row per batch item), then label_smoothing_loss.
XeStepResult xe_step(ExpansionNetImpl& model, const at::Tensor& features, const Batch& batch,
                     const XeStepOptions& options);

// ---------------------------------------------------------------- PNAIC XE

// PNAIC's cross-entropy (docs/pnaic-method.md, "Training"; docs/training.md,
// "PNAIC"): each caption of the batch (the teacher's, by distillation) is cut
// into K groups (draw_group_division at curriculum_rate(step, total_steps, c0)),
// the model decodes the group-major layout on the step-causal mask, and
// label_smoothing_loss is taken over every non-pad target (words, EOS, DEL).
struct PnaicStepOptions {
  int64_t groups = 1;          // K (the model's pnaic_groups)
  PnaicTokens tokens;          // SOS, EOS, DEL, PAD of the student's vocabulary
  double smoothing = 0.1;
  double p_delete = 0.5;       // invalid-group deletion probability
  double c0 = 0.01;            // curriculum start
  int64_t step = 0, total_steps = 0;  // m and M of the curriculum (micro-batches of the stage)
  uint64_t draw_seed = 0;      // the divisions' draws: with each caption's image (the trainer: seed, stage, step)
  bool image_wise = false;     // as XeStepOptions::image_wise
};

// The divisions of the batch's captions (rows of Batch::tokens) as the step draws them.
std::vector<GroupDivision> draw_batch_divisions(const Batch& batch, const PnaicStepOptions& options);

XeStepResult pnaic_xe_step(ExpansionNetImpl& model, const at::Tensor& features, const Batch& batch,
                           const PnaicStepOptions& options);

// ---------------------------------------------------------------- SCST

struct ScstOptions {
  int64_t samples_per_image = 5;
  int64_t max_len = 20;  // sampled words after SOS (EOS included)
  int64_t sos_id = 0, eos_id = 0, pad_id = 0;
};

struct ScstSamples {
  at::Tensor tokens;           // S x L sampled ids after SOS, pad_id after EOS (S = B * samples)
  at::Tensor token_log_probs;  // S x L log p of each sampled id, 0 after EOS (with grad)
  std::vector<std::vector<int64_t>> ids;  // per sample: ids up to and including the first EOS
};

// Draws samples_per_image captions per image from the full softmax with the
// model as it is (call model.train() for the reference's dropout-on sampling),
// recomputing the decoder over the prefix each step as the reference does but
// without a graph; the drawn words are then scored with gradients in one
// teacher-forced pass (token_log_probs).
// features: B x N x final_swin_dim backbone output. Uses the global generator.
ScstSamples scst_sample(ExpansionNetImpl& model, const at::Tensor& features, const ScstOptions& options);

struct ScstStepResult {
  at::Tensor loss;               // scalar, with grad
  std::vector<double> rewards;   // per sample
  double mean_reward = 0;
};

// One SCST objective evaluation: sample, score with CIDEr-D (EOS appended,
// set_vocabulary() must have been called on `reward`), leave-one-out baseline,
// policy loss. image_indices[b] = training image index of row b in `reward`.
ScstStepResult scst_loss(ExpansionNetImpl& model, const at::Tensor& features,
                         const std::vector<size_t>& image_indices, const CiderDReward& reward,
                         const ScstOptions& options);

// scst_loss on the batch's images: reward_rows maps a dataset image index to
// its row in `reward` (the training images).
ScstStepResult scst_step(ExpansionNetImpl& model, const at::Tensor& features, const Batch& batch,
                         const std::vector<size_t>& reward_rows, const CiderDReward& reward,
                         const ScstOptions& options);

}  // namespace expnet
