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
