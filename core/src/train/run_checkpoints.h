// The checkpoints of a run folder (docs/training.md, "Run folder"):
// step-NNNNNNNN.pth (model, config, vocabulary) beside step-NNNNNNNN.state
// (optimizer, CPU generator, progress), latest.json naming the newest, best.pth,
// and only the last keep_last step checkpoints kept.
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/input-archive.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/train_progress.h"

namespace expnet {

struct CheckpointMetadata;

// What --resume continues from: the progress, and the optimizer's saved state
// for the caller to load into the optimizer of that stage.
struct ResumePoint {
  std::string stem;  // step-NNNNNNNN
  TrainProgress progress;
  bool has_optimizer = false;
  torch::serialize::InputArchive optimizer;
};

class RunCheckpoints {
 public:
  RunCheckpoints(std::string dir, int64_t keep_last) : dir_(std::move(dir)), keep_last_(keep_last) {}

  const std::string& dir() const { return dir_; }
  bool any() const;  // latest.json exists
  // The .pth latest.json points at ("" when none): checked before it is loaded.
  std::string latest_path() const;
  std::string latest_stem() const;  // step-NNNNNNNN, "" when none

  // Writes the model as step-<progress.global_step>.pth (and best.pth when
  // `best`) and its .state with the optimizer (when given), the CPU generator
  // and `progress`, whose kept list gains this checkpoint; then points
  // latest.json at it, and only then deletes the step files beyond keep_last.
  // Files are atomic: a kill or a failed write (disk full) at any moment leaves
  // the previous checkpoint loadable and no temporary file once the run resumes.
  // A failure throws, naming the file and the reason; `progress` is then unchanged.
  void save(TrainProgress& progress, const torch::nn::Module& model, const CheckpointMetadata& meta,
            const torch::optim::Optimizer* optimizer, bool best) const;

  // What a process killed while saving left: temporary files and step files
  // not in `kept` (the loaded checkpoint's list). Only the writing rank calls it.
  void tidy(const std::vector<std::string>& kept) const;

  // The newest checkpoint's weights into `model` and its generator state into
  // the global CPU generator; nullopt when the run has none yet.
  std::optional<ResumePoint> load_latest(torch::nn::Module& model) const;

 private:
  void remove_unkept(const std::vector<std::string>& kept) const;

  std::string dir_;
  int64_t keep_last_;
};

}  // namespace expnet
