// The training benchmark (see expnet/train/train_bench.h).
#include "expnet/train/train_bench.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include "expnet/data/data_loader.h"
#include "expnet/data/dataset.h"
#include "expnet/data/shapes_dataset.h"
#include "expnet/image/image_decode.h"
#include "expnet/image/preprocess.h"
#include "expnet/model/expansion_net.h"
#include "expnet/metrics/cider_reward.h"
#include "expnet/model/layers.h"
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

using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

// What both benchmarks set up alike: the shapes set and all its words, the seeded
// model in training mode with the asked dropout, the loader, the trained
// parameters and their RAdam, the autocast of the asked precision.
struct BenchSetup {
  ModelConfig mc;
  Dataset dataset;
  Vocabulary vocab;
  ExpansionNet model{nullptr};
  torch::Device device{torch::kCPU};
  std::unique_ptr<DataLoader> loader;
  std::vector<torch::Tensor> params;
  std::unique_ptr<RAdam> optimizer;
  AutocastMode autocast = AutocastMode::off;
};

std::unique_ptr<BenchSetup> bench_setup(const TrainBenchOptions& o, SamplingMode mode, bool frozen_backbone, double lr) {
  auto b = std::make_unique<BenchSetup>();
  b->mc = o.model_json.empty() ? calibration_model_config() : ModelConfig::from_json(o.model_json, "bench model");
  b->dataset = load_dataset(shapes_dataset_in(o));
  b->vocab = build_vocabulary(b->dataset, 1).vocabulary;
  torch::manual_seed(static_cast<uint64_t>(o.seed));
  b->model = ExpansionNet(b->mc, static_cast<int64_t>(b->vocab.size()));
  b->device = torch::Device(o.device);
  b->model->to(b->device);
  DropoutRates rates;
  rates.enc = rates.dec = rates.enc_input = rates.dec_input = rates.other = o.dropout;
  rates.swin_drop_path = o.drop_path;
  b->model->set_dropout(rates);
  b->model->train();
  LoaderOptions lo;
  lo.mode = mode;
  lo.batch_size = o.batch;
  lo.seed = o.seed;
  lo.workers = o.workers;
  lo.max_words = 20;
  b->loader = std::make_unique<DataLoader>(b->dataset, b->vocab, lo, [](const std::string& path) { return load_image_rgb(path); });
  b->params = trainable_parameters(*b->model, frozen_backbone);
  b->optimizer = std::make_unique<RAdam>(b->params, RAdamOptions(lr));
  b->autocast = training_autocast(false, o.precision, b->device);
  set_fused_training_kernels(o.fused);
  return b;
}

TrainBenchResult result_of(const TrainBenchOptions& o, const BenchSetup& b) {
  TrainBenchResult r;
  r.precision = autocast_name(b.autocast);
  r.fused = o.fused;
  for (const auto& p : b.params) r.parameters += p.numel();
  r.batch = o.batch;
  r.steps = o.steps;
  return r;
}

// Each clock read waits for the device first: CUDA kernels run asynchronously.
Clock::time_point device_now(const std::string& device) {
  wait_for_device(device);
  return Clock::now();
}

struct Phase {
  const char* name;
  std::vector<double> PhaseTimes::*times;
};

// Logs step i (marks[k] .. marks[k+1] is phases[k]) and keeps its times after the warm-up.
void record_step(const TrainBenchOptions& o, int64_t i, const std::vector<Phase>& phases, const std::vector<Clock::time_point>& marks,
                 double cpu_ms, const std::string& tail, PhaseTimes& times) {
  std::string parts;
  for (size_t k = 0; k < phases.size(); ++k)
    parts += fmt::format("{}{} {:.1f}", k ? ", " : "", phases[k].name, ms_between(marks[k], marks[k + 1]));
  spdlog::info("step {}{}: {:.0f} ms (CPU {:.0f} ms) ({}){}", i + 1, i < o.warmup ? " (warm-up)" : "",
               ms_between(marks.front(), marks.back()), cpu_ms, parts, tail);
  if (i < o.warmup) return;
  times.step.push_back(ms_between(marks.front(), marks.back()));
  times.cpu.push_back(cpu_ms);
  for (size_t k = 0; k < phases.size(); ++k) (times.*phases[k].times).push_back(ms_between(marks[k], marks[k + 1]));
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

// The step's batch and its images on the device; marks the data phase's start and end.
torch::Tensor next_batch(BenchSetup& b, const std::string& device, Batch& batch, std::vector<Clock::time_point>& marks) {
  marks = {device_now(device)};
  batch = b.loader->next();
  auto images = images_to_model_input(batch.images, static_cast<int>(b.mc.swin_img_size)).to(b.device);
  marks.push_back(device_now(device));
  return images;
}

// Clipping and the RAdam update, as the trainer does them.
void optimizer_step(BenchSetup& b) {
  clip_gradient_norm(b.params, 1.0);
  b.optimizer->step();
  b.optimizer->zero_grad();
}

// The timed loop both benchmarks share: the data, then `forward` under the
// precision's autocast (it adds its phases' marks and returns the loss),
// backward, the update; logged, and kept after the warm-up.
using Forward = std::function<torch::Tensor(int64_t step, const Batch& batch, const torch::Tensor& images,
                                            std::vector<Clock::time_point>& marks)>;
PhaseTimes run_steps(const TrainBenchOptions& o, BenchSetup& b, const std::vector<Phase>& phases, const Forward& forward) {
  PhaseTimes times;
  const auto one_step = [&](int64_t i, PhaseTimes& into) {
    const double c0 = process_cpu_ms();
    std::vector<Clock::time_point> marks;
    Batch batch;
    const auto images = next_batch(b, o.device, batch, marks);
    torch::Tensor loss;
    {
      AutocastScope scope(b.autocast);  // as the trainer's forward pass
      loss = forward(i, batch, images, marks);
    }
    {
      RECORD_USER_SCOPE("expnet::backward");
      loss.backward();
    }
    marks.push_back(device_now(o.device));
    {
      RECORD_USER_SCOPE("expnet::optimizer");
      optimizer_step(b);
    }
    marks.push_back(device_now(o.device));
    record_step(o, i, phases, marks, process_cpu_ms() - c0, fmt::format(", loss {:.4f}", loss.item<double>()), into);
  };
  for (int64_t i = 0; i < o.warmup + o.steps; ++i) one_step(i, times);
  if (o.profile_step) {
    PhaseTimes untimed;
    o.profile_step([&] { one_step(o.warmup + o.steps, untimed); });
  }
  return times;
}

}  // namespace

TrainBenchResult bench_training(const TrainBenchOptions& o) {
  if (o.batch < 1 || o.steps < 1 || o.warmup < 0) throw std::runtime_error("bench train: --batch and --steps must be >= 1, --warmup >= 0");
  auto setup = bench_setup(o, SamplingMode::CaptionWise, /*frozen_backbone=*/false, 1e-4);
  BenchSetup& b = *setup;
  TrainBenchResult r = result_of(o, b);
  const std::vector<Phase> phases = {{"data", &PhaseTimes::data},         {"backbone fwd", &PhaseTimes::backbone},
                                     {"enc+dec fwd", &PhaseTimes::encdec}, {"loss", &PhaseTimes::loss},
                                     {"backward", &PhaseTimes::backward},  {"optimizer", &PhaseTimes::optimizer}};
  XeStepOptions xe;
  xe.pad_id = b.vocab.pad_id();
  Clock::time_point forward_done;
  xe.forward_done = [&] { forward_done = device_now(o.device); };
  const PhaseTimes times = run_steps(o, b, phases, [&](int64_t, const Batch& batch, const torch::Tensor& images,
                                                       std::vector<Clock::time_point>& marks) {
    const auto feats = b.model->backbone(images);
    marks.push_back(device_now(o.device));
    auto loss = xe_step(*b.model, feats, batch, xe).loss;  // sets forward_done between forward and loss
    marks.push_back(forward_done);
    marks.push_back(device_now(o.device));
    return loss;
  });
  summarise(times, o.batch, r);
  return r;
}

TrainBenchResult bench_scst(const TrainBenchOptions& o) {
  if (o.batch < 1 || o.steps < 1 || o.warmup < 0 || o.samples_per_image < 2 || o.max_len < 1)
    throw std::runtime_error("bench scst: --batch, --steps and --max-len must be >= 1, --warmup >= 0, --samples >= 2");
  auto setup = bench_setup(o, SamplingMode::ImageWise, /*frozen_backbone=*/true, 1e-5);
  BenchSetup& b = *setup;
  TrainBenchResult r = result_of(o, b);
  // The training images' references, as the trainer gives them to the reward (train_data.cpp).
  std::vector<std::vector<std::vector<std::string>>> refs;
  std::vector<size_t> reward_rows(b.dataset.images.size(), SIZE_MAX);
  for (size_t i = 0; i < b.dataset.images.size(); ++i) {
    if (!is_training_split(b.dataset.images[i].split)) continue;
    reward_rows[i] = refs.size();
    refs.emplace_back();
    for (const auto& c : b.dataset.images[i].captions) refs.back().push_back(c.tokens);
  }
  CiderDReward reward(refs);
  reward.set_vocabulary(b.vocab.words(), b.vocab.eos_id());
  ScstOptions scst;
  scst.samples_per_image = o.samples_per_image;
  scst.max_len = o.max_len;
  scst.sos_id = b.vocab.sos_id();
  scst.eos_id = b.vocab.eos_id();
  scst.pad_id = b.vocab.pad_id();
  const std::vector<Phase> phases = {{"data", &PhaseTimes::data},         {"backbone fwd", &PhaseTimes::backbone},
                                     {"sample", &PhaseTimes::sample},      {"reward", &PhaseTimes::reward},
                                     {"loss", &PhaseTimes::loss},          {"backward", &PhaseTimes::backward},
                                     {"optimizer", &PhaseTimes::optimizer}};
  double words = 0, captions = 0;
  const PhaseTimes times = run_steps(o, b, phases, [&](int64_t step, const Batch& batch, const torch::Tensor& images,
                                                       std::vector<Clock::time_point>& marks) {
    torch::Tensor feats;
    {
      torch::NoGradGuard frozen;  // the recipes' SCST stages keep the backbone frozen
      feats = b.model->backbone(images);
    }
    marks.push_back(device_now(o.device));
    const auto samples = scst_sample(*b.model, feats, scst);
    marks.push_back(device_now(o.device));
    std::vector<size_t> per_sample;
    for (size_t image : batch.image_indices)
      for (int64_t k = 0; k < scst.samples_per_image; ++k) per_sample.push_back(reward_rows.at(image));
    const auto rewards = reward.score_ids(per_sample, samples.ids);
    marks.push_back(device_now(o.device));
    auto loss = scst_policy_loss(samples.token_log_probs, scst_advantages(rewards, scst.samples_per_image));
    marks.push_back(device_now(o.device));
    if (step >= o.warmup)
      for (const auto& ids : samples.ids) words += static_cast<double>(ids.size()), captions += 1;
    return loss;
  });
  summarise(times, o.batch, r);
  r.mean_sampled_words = captions > 0 ? words / captions : 0;
  return r;
}

}  // namespace expnet
