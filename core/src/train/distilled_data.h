// A PNAIC run's training data (docs/training.md, "PNAIC"): the training images'
// captions become the teacher's (sequence-level distillation, the targets file
// in <out>/distillation) and the vocabulary the student's (the teacher's plus
// DEL). Validation keeps the human references.
#pragma once

#include <string>

#include "train/train_data.h"

namespace expnet {

class ProcessGroup;
struct PnaicRun;
struct TrainConfig;

// Distributed: rank 0 makes (or reuses) the targets file, the others wait for
// it and read it. `progress`: a line per tenth of the images captioned.
void use_distillation_targets(TrainData& data, PnaicRun& run, const TrainConfig& config, const std::string& out_dir,
                              ProcessGroup* group, bool progress);

}  // namespace expnet
