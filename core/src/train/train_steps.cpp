// The XE and SCST steps (see expnet/train/train_steps.h).
#include "expnet/train/train_steps.h"

#include <torch/torch.h>

#include <random>
#include <stdexcept>
#include <string>

#include "expnet/data/data_loader.h"
#include "expnet/metrics/cider_reward.h"
#include "expnet/model/expansion_net.h"
#include "expnet/model/pnaic.h"
#include "expnet/train/losses.h"

namespace expnet {

std::vector<torch::Tensor> trainable_parameters(ExpansionNetImpl& model, bool frozen_backbone) {
  std::vector<torch::Tensor> out;
  for (const auto& item : model.named_parameters()) {
    const bool backbone = item.key().rfind("swin_transf.", 0) == 0;
    item.value().set_requires_grad(!(frozen_backbone && backbone));
    if (!(frozen_backbone && backbone)) out.push_back(item.value());
  }
  return out;
}

XeStepResult xe_step(ExpansionNetImpl& model, const torch::Tensor& features, const Batch& batch,
                     const XeStepOptions& options) {
  const auto device = features.device();
  const auto rows = static_cast<int64_t>(batch.caption_items.size());
  // from_blob does not own the batch's ids: clone before they move to the device.
  const auto tokens = torch::from_blob(const_cast<int64_t*>(batch.tokens.data()), {rows, batch.length}, torch::kLong)
                          .clone()
                          .to(device);
  const auto input = tokens.narrow(1, 0, batch.length - 1);
  const auto target = tokens.narrow(1, 1, batch.length - 1);
  auto enc = model.encode(features);
  if (options.image_wise)
    enc = enc.index_select(0, torch::tensor(batch.caption_items, torch::kLong).to(device));
  // Under autocast the decoder answers in float16; the loss is taken in float32.
  const auto log_probs = model.decode(enc, input, causal_self_mask(input, options.pad_id)).to(torch::kFloat);
  if (options.forward_done) options.forward_done();
  XeStepResult result;
  result.loss = label_smoothing_loss(log_probs, target, options.pad_id, options.smoothing, &result.target_tokens);
  return result;
}

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace

std::vector<GroupDivision> draw_batch_divisions(const Batch& batch, const PnaicStepOptions& options) {
  const double f = curriculum_rate(options.step, options.total_steps, options.c0);
  std::vector<GroupDivision> out;
  for (size_t row = 0; row < batch.caption_items.size(); ++row) {
    // One generator per caption, seeded by the step's seed and the caption's
    // image and row among that image's rows: the draws do not depend on how
    // the batch is split over ranks (N ranks of b draw what one process of N*b does).
    const auto item = static_cast<size_t>(batch.caption_items[row]);
    size_t nth = 0;
    for (size_t r = 0; r < row; ++r) nth += static_cast<size_t>(batch.caption_items[r]) == item;
    const uint64_t image = item < batch.image_indices.size() ? batch.image_indices[item] : item;
    std::mt19937_64 rng(splitmix64(splitmix64(options.draw_seed ^ splitmix64(image)) + nth));
    // A row is SOS w1 .. wn EOS PAD...: the words are what lies between SOS and EOS.
    std::vector<int64_t> words;
    for (int64_t t = 1; t < batch.length; ++t) {
      const int64_t id = batch.tokens[row * static_cast<size_t>(batch.length) + static_cast<size_t>(t)];
      if (id == options.tokens.eos || id == options.tokens.pad) break;
      words.push_back(id);
    }
    out.push_back(draw_group_division(words, options.groups, f, options.p_delete, rng));
  }
  return out;
}

XeStepResult pnaic_xe_step(ExpansionNetImpl& model, const torch::Tensor& features, const Batch& batch,
                           const PnaicStepOptions& options) {
  if (model.config().pnaic_groups != options.groups)
    throw std::invalid_argument("pnaic_xe_step: the model has pnaic_groups " + std::to_string(model.config().pnaic_groups) +
                                ", the step was asked for K = " + std::to_string(options.groups));
  const auto device = features.device();
  const auto laid = layout_group_batch(draw_batch_divisions(batch, options), options.groups, options.tokens,
                                       model.config().max_seq_len);
  const auto input = laid.tokens.to(device);
  auto enc = model.encode(features);
  if (options.image_wise) enc = enc.index_select(0, torch::tensor(batch.caption_items, torch::kLong).to(device));
  const auto log_probs = model
                             .decode(enc, input, step_causal_mask(input, options.groups, options.tokens.pad),
                                     cross_attention_mask(input, options.tokens.pad, enc.size(1)))
                             .to(torch::kFloat);
  XeStepResult result;
  result.loss = label_smoothing_loss(log_probs, laid.targets.to(device), options.tokens.pad, options.smoothing,
                                     &result.target_tokens);
  return result;
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

ScstStepResult scst_step(ExpansionNetImpl& model, const torch::Tensor& features, const Batch& batch,
                         const std::vector<size_t>& reward_rows, const CiderDReward& reward,
                         const ScstOptions& options) {
  std::vector<size_t> rows;
  for (size_t image : batch.image_indices) rows.push_back(reward_rows.at(image));
  return scst_loss(model, features, rows, reward, options);
}

}  // namespace expnet
