// Where a training run is: stage, epoch, batch, steps, scores, the checkpoints
// kept, the loader's position and the loss scale. Saved in every checkpoint's
// .state file, so --resume continues exactly (docs/training.md, "Run folder").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace expnet {

struct TrainProgress {
  int64_t stage = 0, epoch = 0, position = 0;  // position: next batch in the epoch
  int64_t iteration = 0;                      // micro-batches in this stage (scheduler)
  int64_t global_step = 0;                    // optimizer steps overall
  double best_cider = -1, last_cider = 0;
  double loss_scale = 65536.0;                // autocast: dynamic loss scale
  int64_t scale_good_steps = 0;
  std::vector<std::string> kept;              // checkpoint stems, oldest first
  std::string loader_state;                   // LoaderState::to_json()

  // Dynamic loss scaling as torch.cuda.amp.GradScaler: halve after a step that
  // was not finite (the guard skipped it), double after 2000 clean steps.
  void update_loss_scale(bool finite);

  std::string to_json() const;
  static TrainProgress from_json(const std::string& text);  // throws on a missing key
};

}  // namespace expnet
