// The training run behind `expnet train`: the stages of a TrainConfig
// (expnet/train/train_config.h) run in order with checkpoints, a run store,
// validation each epoch and exact resume. Run folder and tables: docs/training.md.
#pragma once

#include <cstdint>
#include <string>

#include "expnet/train/train_config.h"

namespace expnet {

struct TrainOptions {
  std::string out_dir;      // run folder (created)
  std::string store_path;   // empty: <out_dir>/runs.sqlite
  bool resume = false;
  bool progress = true;     // progress bar on stderr
  std::string device = "cpu";
  // Distributed (RANK/WORLD_SIZE/... in the environment, see expnet/train/distributed.h):
  // every collective fails after this long without an answer from a peer;
  // 0 = the config's dist_timeout (--dist-timeout overrides it).
  double dist_timeout_s = 0;
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

}  // namespace expnet
