// A training run's curves as a TensorBoard event file (`expnet runs export RUN
// --tensorboard DIR`): TF1 scalar summaries that `tensorboard --logdir DIR` shows.
#pragma once

#include <cstdint>
#include <string>

#include "expnet/train/run_store.h"

namespace expnet {

struct TensorboardExport {
  std::string path;      // the event file written
  int64_t scalars = 0;   // values written (train/loss, train/lr, ..., val/CIDEr, val/Bleu_4)
  int64_t records = 0;   // TFRecords, the file_version record included
};

// Writes <dir>/events.out.tfevents.<created_at seconds>.<hostname>.<run name
// sanitised> atomically, creating `dir` when missing. Per step row: train/loss,
// train/lr, train/images_per_s; per validation: val/CIDEr, val/Bleu_4; non-finite
// values (a skipped step's loss) are left out. Exporting the same run again
// replaces the file instead of adding a second copy of the curves. Throws
// std::runtime_error naming the folder or file, the reason and what to do.
TensorboardExport write_tensorboard_events(const RunStore& store, const RunInfo& run, const std::string& dir);

// A folder name for `run` under a --logdir that holds several runs (TensorBoard
// shows each folder as one run): its name, file-name safe.
std::string tensorboard_run_folder(const RunInfo& run);

}  // namespace expnet
