// `expnet bench train`: end-to-end XE training steps (loader with image
// decoding, backbone, encoder, decoder, label-smoothed loss, backward, RAdam)
// on the generated shapes set, timed per phase; medians after warm-up.
// `expnet bench scst`: SCST steps on the same set (frozen backbone, as the
// recipes' SCST stages: 5 sampled captions per image, CIDEr-D rewards with the
// leave-one-out baseline, policy loss, backward, RAdam).
// Figures: docs/training.md ("Benchmark").
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "expnet/train/train_config.h"

namespace expnet {

struct TrainBenchOptions {
  std::string model_json;        // empty: the shapes-demo (calibration) model
  std::string data_dir;          // shapes set (generated there when absent)
  int64_t shapes_images = 300;
  int64_t batch = 32;
  int64_t steps = 10, warmup = 3;
  int workers = 2;
  uint64_t seed = 1;
  std::string device = "cpu";    // "cuda" or "cuda:N" trains there (each phase waits for the device before it is timed)
  double dropout = 0.1, drop_path = 0.0;
  TrainPrecision precision = TrainPrecision::automatic;  // as a config's "precision"
  bool fused = true;  // false: LibTorch's operators where our fused training kernels would run
  // SCST (bench_scst): `batch` counts images there, each sampled this often, at most max_len words.
  int64_t samples_per_image = 5, max_len = 20;
  // When set, one more step after the timed ones runs inside this call (the CLI
  // wraps it in LibTorch's profiler for `--profile`); it is not in the figures.
  std::function<void(const std::function<void()>& step)> profile_step;
};

struct TrainBenchResult {
  int64_t parameters = 0, batch = 0, steps = 0;
  std::string precision;  // what ran: fp32 or bf16
  bool fused = true;      // whether the fused training kernels could run
  double images_per_s = 0;       // batch / median step time
  // Process CPU time per step (all threads): on a loaded machine wall time
  // stretches, this does not (with 1 thread: images per CPU-second).
  double cpu_ms = 0, images_per_cpu_s = 0;
  // Median milliseconds per step of each phase (step = their sum, measured as one).
  double step_ms = 0, data_ms = 0, backbone_fwd_ms = 0, encdec_fwd_ms = 0, loss_ms = 0, backward_ms = 0,
         optimizer_ms = 0;
  // SCST only: drawing the samples (no graph) and scoring them with gradients
  // (sample_ms), the CIDEr-D rewards (reward_ms; loss_ms is the policy loss),
  // and the mean sampled words per caption (EOS included).
  double sample_ms = 0, reward_ms = 0, mean_sampled_words = 0;
};

TrainBenchResult bench_training(const TrainBenchOptions& options);
TrainBenchResult bench_scst(const TrainBenchOptions& options);

}  // namespace expnet
