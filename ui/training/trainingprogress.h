// Where a training run stands, from what the Training page knows of it: the
// run's status and config, its step and validation rows in the run store and,
// for the trainer the page started, its live progress bar. Pure arithmetic
// (no widgets), so it is tested on its own (tests/ui/common).
#pragma once

#include <QJsonArray>
#include <QString>
#include <QVector>

#include <string>
#include <vector>

#include "expnet/train/run_store.h"
#include "training/trainingprocess.h"

struct RunProgress {
  double fraction = 0;          // epochs done over all stages, 0..1 (within an epoch: its batches)
  QString where;                // "stage xe (1/2) · epoch 3/8 · batch 12/40 · 37.5 img/s"; empty before the first row
  double stageEtaSeconds = -1;  // rough time left in the current stage (images/s); -1 = unknown
};

// `stages`: the run config's "stages" (epochs, batch, accumulate, max_batches_per_epoch);
// `stageNames`: the store's names of the stages; `live`: the trainer's last
// progress line when the page runs it (nullptr otherwise), used only while it
// is about the epoch the rows say is current.
RunProgress runProgress(const std::string& status, const QJsonArray& stages, const QVector<QString>& stageNames,
                        const std::vector<expnet::StepRecord>& steps,
                        const std::vector<expnet::ValidationRecord>& validations, const TrainProgressLine* live);

// The ETA over all stages: the pace since the page started following the run
// (stages differ in speed, so this is a rough figure until the run has gone a while).
class EtaClock {
 public:
  // Seconds left at `nowMs` (any monotonic milliseconds) for a run at `fraction`;
  // -1 until the fraction has grown since the first sample. A fraction that goes
  // back (a resumed run that truncated its rows) starts the clock again.
  double update(double fraction, qint64 nowMs);
  void reset() { startFraction_ = -1; }

 private:
  qint64 startMs_ = 0;
  double startFraction_ = -1;
};

// "45s", "3m 07s", "2h 05m".
QString formatDuration(double seconds);
// The line beside the progress bar, without the percentage.
QString progressSummary(const std::string& status, const RunProgress& progress, double etaSeconds, size_t stepRows,
                        size_t validationRows);
