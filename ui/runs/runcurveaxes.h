// Where a training run's records sit on the x axes the Runs page's curves
// offer (RunCurves): optimizer step, epoch counted on across stages, or
// training time. Kept apart from the widget: pure arithmetic on the records.
#pragma once

#include <vector>

#include "expnet/train/run_store.h"

enum class CurveXAxis { Step, Epoch, WallTime };

struct CurvePositions {
  std::vector<double> steps, validations;  // one x per record; NaN: not on this axis
};

// Step: the records' optimizer steps. Epoch: a stage's epochs continue after
// those of the stages before it; a step at position i (0-based) of its epoch
// sits at epoch + (i + 1) / n, n the most steps any epoch of its stage has
// (so a live epoch fills in from the left); a validation closes its epoch
// (epoch + 1). Wall time: the steps' wall_s (NaN where 0: not recorded, older
// stores); a validation takes that of the last step at or before its step.
// `steps` ordered by step, as RunStore::steps returns them.
CurvePositions curvePositions(const std::vector<expnet::StepRecord>& steps,
                              const std::vector<expnet::ValidationRecord>& validations, CurveXAxis axis);
