// The training recipe: a list of stages (XE or SCST, frozen or end-to-end
// backbone), run with checkpoints, a run store, validation each epoch and
// exact resume. Config schema, file names and tables: docs/training.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace expnet {

struct StageConfig {
  std::string name = "A";
  std::string objective = "xe";   // xe | scst
  bool frozen_backbone = true;    // "backbone": "frozen" | "train"
  int64_t batch = 48;             // micro-batch (images for scst, pairs for xe)
  int64_t accumulate = 1;         // micro-batches per optimizer step (losses summed)
  double lr = 2e-4;
  std::string schedule = "reference";  // reference | linear | fixed
  int64_t warmup = 0;
  double anneal_factor = 1.0;
  int64_t anneal_every = 1;       // epochs
  int64_t epochs = 1;
  double clip = 0;                // max grad norm; 0 = off
  double dropout = 0.3;           // all captioner dropouts
  double drop_path = 0.1;         // Swin drop-path when the backbone trains
  int64_t max_batches_per_epoch = 0;  // 0 = the whole epoch (tests and quick runs)
  // XE: "caption" = a batch of (image, caption) pairs, every caption once per
  // epoch (the reference); "image" = a batch of images, each with all its
  // captions, so the backbone runs once per image (self-critical.pytorch's
  // seq_per_img). SCST is always image-wise.
  std::string batch_unit = "caption";
};

struct TrainConfig {
  std::string name = "run";
  uint64_t seed = 1;
  std::string model_json;         // ModelConfig::to_json()
  std::string dataset = "shapes"; // dataset file, or "shapes" (generated into <out>/shapes)
  int64_t shapes_images = 1500;
  uint64_t shapes_seed = 1;
  int vocab_min_count = 5;
  int64_t validation_images = 100;
  int validation_beam = 3, validation_max_len = 20;
  int64_t keep_last = 2;
  int64_t checkpoint_every = 0;   // optimizer steps; 0 = end of each epoch only
  int workers = 2;
  // Frozen-backbone stages: "disk" = features extracted once into
  // <out>/features/ (float16, memory-mapped, expnet/data/feature_cache.h);
  // "off" = the frozen backbone runs on every batch (benchmarks, tests).
  std::string feature_cache = "disk";
  // Weights to start from instead of the seeded initialisation (a checkpoint of
  // the same model and vocabulary, e.g. an XE run's best.pth); empty = none.
  std::string init_checkpoint;
  std::vector<StageConfig> stages;

  static TrainConfig from_json(const std::string& text, const std::string& source);  // strict, named errors
  std::string to_json() const;
};

TrainConfig train_preset(const std::string& name);  // "paper", "shapes-demo"
std::vector<std::string> train_preset_names();

struct TrainOptions {
  std::string out_dir;      // run folder (created)
  std::string store_path;   // empty: <out_dir>/runs.sqlite
  bool resume = false;
  bool progress = true;     // progress bar on stderr
  std::string device = "cpu";
  // Distributed (RANK/WORLD_SIZE/... in the environment, see expnet/train/distributed.h):
  // every collective fails after this long without an answer from a peer.
  double dist_timeout_s = 60;
  // Mixed precision (CUDA only): forward passes under autocast (float16) with
  // dynamic loss scaling. Refused on CPU.
  bool autocast = false;
};

struct TrainOutcome {
  std::string status;       // finished | interrupted
  std::string final_checkpoint;
  double last_cider_d = 0;
  int64_t steps = 0;
  int rank = 0;             // distributed: only rank 0 reports (and writes files)
};

// Runs (or resumes) the recipe. SIGINT/SIGTERM: checkpoint, then return
// "interrupted". Throws std::runtime_error for bad inputs.
TrainOutcome run_training(const TrainConfig& config, const TrainOptions& options);

// `expnet bench train`: end-to-end XE training steps (loader with image
// decoding, backbone, encoder, decoder, label-smoothed loss, backward, RAdam)
// on the generated shapes set, timed per phase; medians after warm-up.
struct TrainBenchOptions {
  std::string model_json;        // empty: the shapes-demo (calibration) model
  std::string data_dir;          // shapes set (generated there when absent)
  int64_t shapes_images = 300;
  int64_t batch = 32;
  int64_t steps = 10, warmup = 3;
  int workers = 2;
  uint64_t seed = 1;
  double dropout = 0.1, drop_path = 0.0;
};
struct TrainBenchResult {
  int64_t parameters = 0, batch = 0, steps = 0;
  double images_per_s = 0;       // batch / median step time
  // Process CPU time per step (all threads): on a loaded machine wall time
  // stretches, this does not (with 1 thread: images per CPU-second).
  double cpu_ms = 0, images_per_cpu_s = 0;
  // Median milliseconds per step of each phase (step = their sum, measured as one).
  double step_ms = 0, data_ms = 0, backbone_fwd_ms = 0, encdec_fwd_ms = 0, loss_ms = 0, backward_ms = 0,
         optimizer_ms = 0;
};
TrainBenchResult bench_training(const TrainBenchOptions& options);

}  // namespace expnet
