// The training benchmark (see expnet/train/train_bench.h).
#include "expnet/train/train_bench.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "expnet/data/data_loader.h"
#include "expnet/data/dataset.h"
#include "expnet/data/shapes_dataset.h"
#include "expnet/image/image_decode.h"
#include "expnet/image/preprocess.h"
#include "expnet/model/expansion_net.h"
#include "expnet/metrics/cider_reward.h"
#include "expnet/model/model_config.h"
#include "expnet/train/losses.h"
#include "expnet/train/radam.h"
#include "expnet/text/vocabulary.h"
#include "expnet/train/train_steps.h"
#include "expnet/system/statistics.h"
#include "expnet/system/system.h"
#include "train/autocast_scope.h"

namespace fs = std::filesystem;

namespace expnet {
namespace {

double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return 1e3 * static_cast<double>(ts.tv_sec) + 1e-6 * static_cast<double>(ts.tv_nsec);
}

std::string shapes_dataset_in(const TrainBenchOptions& o) {
  const std::string json_path = o.data_dir + "/dataset_coco.json";
  if (fs::exists(json_path)) return json_path;
  ShapesOptions so;
  so.out_dir = o.data_dir;
  so.images = o.shapes_images;
  so.seed = o.seed;
  spdlog::info("generating {} shapes images into {}", so.images, so.out_dir);
  return make_shapes_dataset(so).json_path;
}

// Milliseconds of each phase of every timed step.
struct PhaseTimes {
  std::vector<double> step, cpu, data, backbone, encdec, sample, reward, loss, backward, optimizer;
};

// The benchmarks' model: seeded, on the device, with the asked dropout, in training mode.
ExpansionNet bench_model(const TrainBenchOptions& o, const ModelConfig& mc, int64_t vocab_size) {
  torch::manual_seed(static_cast<uint64_t>(o.seed));
  ExpansionNet model(mc, vocab_size);
  model->to(torch::Device(o.device));
  DropoutRates rates;
  rates.enc = rates.dec = rates.enc_input = rates.dec_input = rates.other = o.dropout;
  rates.swin_drop_path = o.drop_path;
  model->set_dropout(rates);
  model->train();
  return model;
}

// The medians, and images/s from the median step (`images` per step).
void summarise(const PhaseTimes& t, int64_t images, TrainBenchResult& r) {
  const auto middle = [](const std::vector<double>& v) { return v.empty() ? 0.0 : median(v); };
  r.step_ms = middle(t.step);
  r.data_ms = middle(t.data);
  r.backbone_fwd_ms = middle(t.backbone);
  r.encdec_fwd_ms = middle(t.encdec);
  r.sample_ms = middle(t.sample);
  r.reward_ms = middle(t.reward);
  r.loss_ms = middle(t.loss);
  r.backward_ms = middle(t.backward);
  r.optimizer_ms = middle(t.optimizer);
  r.cpu_ms = middle(t.cpu);
  r.images_per_cpu_s = r.cpu_ms > 0 ? 1000.0 * static_cast<double>(images) / r.cpu_ms : 0;
  r.images_per_s = r.step_ms > 0 ? 1000.0 * static_cast<double>(images) / r.step_ms : 0;
}

using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

}  // namespace

TrainBenchResult bench_training(const TrainBenchOptions& o) {
  if (o.batch < 1 || o.steps < 1 || o.warmup < 0) throw std::runtime_error("bench train: --batch and --steps must be >= 1, --warmup >= 0");
  const ModelConfig mc = o.model_json.empty() ? calibration_model_config() : ModelConfig::from_json(o.model_json, "bench train model");
  const Dataset dataset = load_dataset(shapes_dataset_in(o));
  const Vocabulary vocab = build_vocabulary(dataset, 1).vocabulary;
  ExpansionNet model = bench_model(o, mc, static_cast<int64_t>(vocab.size()));
  const torch::Device device(o.device);
  LoaderOptions lo;
  lo.mode = SamplingMode::CaptionWise;
  lo.batch_size = o.batch;
  lo.seed = o.seed;
  lo.workers = o.workers;
  lo.max_words = 20;
  DataLoader loader(dataset, vocab, lo, [](const std::string& path) { return load_image_rgb(path); });
  const auto params = trainable_parameters(*model, /*frozen_backbone=*/false);
  RAdam optimizer(params, RAdamOptions(1e-4));

  TrainBenchResult r;
  const AutocastMode autocast = training_autocast(false, o.precision, device);
  r.precision = autocast_name(autocast);
  for (const auto& p : params) r.parameters += p.numel();
  r.batch = o.batch;
  r.steps = o.steps;
  using clock = Clock;
  const auto ms = ms_between;
  clock::time_point t3;
  XeStepOptions xe;
  xe.pad_id = vocab.pad_id();
  // Each clock read waits for the device first: CUDA kernels run asynchronously.
  const auto now = [&o] {
    wait_for_device(o.device);
    return clock::now();
  };
  xe.forward_done = [&t3, &now] { t3 = now(); };
  PhaseTimes times;
  for (int64_t i = 0; i < o.warmup + o.steps; ++i) {
    const double c0 = process_cpu_ms();
    const auto t0 = now();
    Batch batch = loader.next();
    const auto images = images_to_model_input(batch.images, static_cast<int>(mc.swin_img_size)).to(device);
    const auto t1 = now();
    torch::Tensor loss;
    clock::time_point t2, t4;
    {
      AutocastScope scope(autocast);  // as the trainer's forward pass
      const auto feats = model->backbone(images);
      t2 = now();
      loss = xe_step(*model, feats, batch, xe).loss;  // sets t3 between forward and loss
      t4 = now();
    }
    loss.backward();
    const auto t5 = now();
    torch::nn::utils::clip_grad_norm_(params, 1.0);
    optimizer.step();
    optimizer.zero_grad();
    const auto t6 = now();
    const double c6 = process_cpu_ms();
    spdlog::info("step {}{}: {:.0f} ms (CPU {:.0f} ms) (data {:.0f}, backbone fwd {:.0f}, enc+dec fwd {:.0f}, loss {:.0f}, backward {:.0f}, "
                 "optimizer {:.0f}), loss {:.4f}", i + 1, i < o.warmup ? " (warm-up)" : "", ms(t0, t6), c6 - c0, ms(t0, t1),
                 ms(t1, t2), ms(t2, t3), ms(t3, t4), ms(t4, t5), ms(t5, t6), loss.item<double>());
    if (i < o.warmup) continue;
    times.step.push_back(ms(t0, t6));
    times.cpu.push_back(c6 - c0);
    times.data.push_back(ms(t0, t1));
    times.backbone.push_back(ms(t1, t2));
    times.encdec.push_back(ms(t2, t3));
    times.loss.push_back(ms(t3, t4));
    times.backward.push_back(ms(t4, t5));
    times.optimizer.push_back(ms(t5, t6));
  }
  summarise(times, o.batch, r);
  return r;
}

TrainBenchResult bench_scst(const TrainBenchOptions& o) {
  if (o.batch < 1 || o.steps < 1 || o.warmup < 0 || o.samples_per_image < 2 || o.max_len < 1)
    throw std::runtime_error("bench scst: --batch, --steps and --max-len must be >= 1, --warmup >= 0, --samples >= 2");
  const ModelConfig mc = o.model_json.empty() ? calibration_model_config() : ModelConfig::from_json(o.model_json, "bench scst model");
  const Dataset dataset = load_dataset(shapes_dataset_in(o));
  const Vocabulary vocab = build_vocabulary(dataset, 1).vocabulary;
  ExpansionNet model = bench_model(o, mc, static_cast<int64_t>(vocab.size()));
  const torch::Device device(o.device);
  // The training images' references, as the trainer gives them to the reward (train_data.cpp).
  std::vector<std::vector<std::vector<std::string>>> refs;
  std::vector<size_t> reward_rows(dataset.images.size(), SIZE_MAX);
  for (size_t i = 0; i < dataset.images.size(); ++i) {
    if (!is_training_split(dataset.images[i].split)) continue;
    reward_rows[i] = refs.size();
    refs.emplace_back();
    for (const auto& c : dataset.images[i].captions) refs.back().push_back(c.tokens);
  }
  CiderDReward reward(refs);
  reward.set_vocabulary(vocab.words(), vocab.eos_id());
  LoaderOptions lo;
  lo.mode = SamplingMode::ImageWise;
  lo.batch_size = o.batch;
  lo.seed = o.seed;
  lo.workers = o.workers;
  lo.max_words = 20;
  DataLoader loader(dataset, vocab, lo, [](const std::string& path) { return load_image_rgb(path); });
  const auto params = trainable_parameters(*model, /*frozen_backbone=*/true);
  RAdam optimizer(params, RAdamOptions(1e-5));
  ScstOptions scst;
  scst.samples_per_image = o.samples_per_image;
  scst.max_len = o.max_len;
  scst.sos_id = vocab.sos_id();
  scst.eos_id = vocab.eos_id();
  scst.pad_id = vocab.pad_id();

  TrainBenchResult r;
  const AutocastMode autocast = training_autocast(false, o.precision, device);
  r.precision = autocast_name(autocast);
  for (const auto& p : params) r.parameters += p.numel();
  r.batch = o.batch;
  r.steps = o.steps;
  const auto now = [&o] {
    wait_for_device(o.device);
    return Clock::now();
  };
  PhaseTimes times;
  double words = 0, captions = 0;
  for (int64_t i = 0; i < o.warmup + o.steps; ++i) {
    const double c0 = process_cpu_ms();
    const auto t0 = now();
    Batch batch = loader.next();
    const auto images = images_to_model_input(batch.images, static_cast<int>(mc.swin_img_size)).to(device);
    const auto t1 = now();
    torch::Tensor loss;
    std::vector<double> rewards;
    Clock::time_point t2, t3, t4, t5;
    {
      AutocastScope scope(autocast);  // as the trainer's forward pass
      torch::Tensor feats;
      {
        torch::NoGradGuard frozen;  // the recipes' SCST stages keep the backbone frozen
        feats = model->backbone(images);
      }
      t2 = now();
      const auto samples = scst_sample(*model, feats, scst);
      t3 = now();
      std::vector<size_t> per_sample;
      for (size_t image : batch.image_indices)
        for (int64_t k = 0; k < scst.samples_per_image; ++k) per_sample.push_back(reward_rows.at(image));
      rewards = reward.score_ids(per_sample, samples.ids);
      t4 = now();
      loss = scst_policy_loss(samples.token_log_probs, scst_advantages(rewards, scst.samples_per_image));
      t5 = now();
      if (i >= o.warmup)
        for (const auto& ids : samples.ids) words += static_cast<double>(ids.size()), captions += 1;
    }
    loss.backward();
    const auto t6 = now();
    torch::nn::utils::clip_grad_norm_(params, 1.0);
    optimizer.step();
    optimizer.zero_grad();
    const auto t7 = now();
    const double c7 = process_cpu_ms();
    spdlog::info("step {}{}: {:.0f} ms (CPU {:.0f} ms) (data {:.0f}, backbone fwd {:.0f}, sample {:.0f}, reward {:.1f}, loss {:.1f}, "
                 "backward {:.0f}, optimizer {:.0f})", i + 1, i < o.warmup ? " (warm-up)" : "", ms_between(t0, t7), c7 - c0,
                 ms_between(t0, t1), ms_between(t1, t2), ms_between(t2, t3), ms_between(t3, t4), ms_between(t4, t5),
                 ms_between(t5, t6), ms_between(t6, t7));
    if (i < o.warmup) continue;
    times.step.push_back(ms_between(t0, t7));
    times.cpu.push_back(c7 - c0);
    times.data.push_back(ms_between(t0, t1));
    times.backbone.push_back(ms_between(t1, t2));
    times.sample.push_back(ms_between(t2, t3));
    times.reward.push_back(ms_between(t3, t4));
    times.loss.push_back(ms_between(t4, t5));
    times.backward.push_back(ms_between(t5, t6));
    times.optimizer.push_back(ms_between(t6, t7));
  }
  summarise(times, o.batch, r);
  r.mean_sampled_words = captions > 0 ? words / captions : 0;
  return r;
}

}  // namespace expnet
