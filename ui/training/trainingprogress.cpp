#include "training/trainingprogress.h"

#include <QJsonObject>

#include <algorithm>
#include <cmath>
#include <utility>

namespace {
struct EpochSteps {
  int steps = 0;
  double imagesPerSecond = 0;  // the latest figure of the epoch
};

// The step rows of one epoch; rows are in step order, so this reads from the end.
EpochSteps countSteps(const std::vector<expnet::StepRecord>& rows, int stage, int epoch) {
  EpochSteps out;
  for (auto it = rows.rbegin(); it != rows.rend(); ++it) {
    if (it->stage < stage || (it->stage == stage && it->epoch < epoch)) break;
    if (it->stage != stage || it->epoch != epoch) continue;
    if (out.steps++ == 0) out.imagesPerSecond = it->images_per_s;
  }
  return out;
}
}  // namespace

RunProgress runProgress(const std::string& status, const QJsonArray& stages, const QVector<QString>& stageNames,
                        const std::vector<expnet::StepRecord>& steps,
                        const std::vector<expnet::ValidationRecord>& validations, const TrainProgressLine* live) {
  RunProgress out;
  QVector<int> epochs;
  int totalEpochs = 0;
  for (const auto& s : stages) {
    epochs << s.toObject().value(QStringLiteral("epochs")).toInt(1);
    totalEpochs += epochs.last();
  }
  double done = 0;
  if (status == "finished") {
    done = totalEpochs;
  } else if (!steps.empty() || !validations.empty()) {
    int stage = 0, epoch = 0;
    if (!steps.empty()) {
      stage = int(steps.back().stage);
      epoch = int(steps.back().epoch);
    }
    // A validation row for that epoch: the epoch is complete.
    if (!validations.empty()) {
      const auto& v = validations.back();
      if (std::make_pair(int(v.stage), int(v.epoch)) >= std::make_pair(stage, epoch)) {
        stage = int(v.stage);
        epoch = int(v.epoch) + 1;
      }
    }
    const bool liveBar =
        live && live->total > 0 && live->stage == stageNames.value(stage) && live->epoch == epoch + 1;
    // Without the trainer's own bar (a run followed from the store): the step
    // rows of this epoch over the steps of a whole one.
    const QJsonObject stageConfig = stages.at(stage).toObject();
    const int accumulate = std::max(1, stageConfig.value(QStringLiteral("accumulate")).toInt(1));
    const int stepImages = accumulate * std::max(1, stageConfig.value(QStringLiteral("batch")).toInt(1));
    const EpochSteps counted = countSteps(steps, stage, epoch);
    int perEpoch = 0;
    if (const int cap = stageConfig.value(QStringLiteral("max_batches_per_epoch")).toInt(0); cap > 0)
      perEpoch = (cap + accumulate - 1) / accumulate;
    else if (epoch > 0)
      perEpoch = countSteps(steps, stage, epoch - 1).steps;
    double within = 0;
    if (liveBar)
      within = double(live->done) / live->total;
    else if (perEpoch > 0)
      within = std::min(1.0, double(counted.steps) / perEpoch);
    // Rough ETA of this stage alone, from the trainer's images/s (validations not counted).
    if (perEpoch > 0 && counted.imagesPerSecond > 0 && stage < epochs.size()) {
      const double remainingSteps = double(epochs[stage] - epoch - 1) * perEpoch + std::max(0, perEpoch - counted.steps);
      if (remainingSteps > 0) out.stageEtaSeconds = remainingSteps * stepImages / counted.imagesPerSecond;
    }
    for (int i = 0; i < stage && i < epochs.size(); ++i) done += epochs[i];
    done += epoch + within;
    const QString stageName = stageNames.value(stage, QString::number(stage + 1));
    if (stage < epochs.size())
      out.where = QStringLiteral("stage %1 (%2/%3) · epoch %4/%5")
                      .arg(stageName)
                      .arg(stage + 1)
                      .arg(epochs.size())
                      .arg(std::min(epoch + 1, epochs[stage]))
                      .arg(epochs[stage]);
    const bool validating = status == "running" && perEpoch > 0 && counted.steps >= perEpoch;
    if (validating && !liveBar) out.where += QStringLiteral(" · validating");
    if (liveBar)
      out.where += QStringLiteral(" · batch %1/%2 · %3 img/s").arg(live->done).arg(live->total).arg(live->imagesPerSecond, 0, 'f', 1);
  }
  out.fraction = totalEpochs > 0 ? std::clamp(done / totalEpochs, 0.0, 1.0) : 0;
  return out;
}

double EtaClock::update(double fraction, qint64 nowMs) {
  if (startFraction_ < 0 || fraction < startFraction_) {
    startMs_ = nowMs;
    startFraction_ = fraction;
    return -1;
  }
  if (fraction <= startFraction_) return -1;
  const double elapsed = double(nowMs - startMs_) / 1000.0;
  return std::max(0.0, elapsed) * (1 - fraction) / (fraction - startFraction_);
}

QString formatDuration(double seconds) {
  const qint64 total = std::max<qint64>(0, qint64(std::llround(seconds)));
  if (total >= 3600) return QStringLiteral("%1h %2m").arg(total / 3600).arg((total % 3600) / 60, 2, 10, QChar('0'));
  if (total >= 60) return QStringLiteral("%1m %2s").arg(total / 60).arg(total % 60, 2, 10, QChar('0'));
  return QStringLiteral("%1s").arg(total);
}

QString progressSummary(const std::string& status, const RunProgress& progress, double etaSeconds, size_t stepRows,
                        size_t validationRows) {
  const bool live = status == "running";
  if (live && progress.where.isEmpty()) return QStringLiteral("Started: waiting for the first optimizer step");
  if (status == "finished")
    return QStringLiteral("Finished: %1 optimizer steps, %2 validations").arg(stepRows).arg(validationRows);
  if (status == "interrupted")
    return QStringLiteral("Interrupted at %1: Resume continues from the last checkpoint").arg(progress.where);
  if (live && etaSeconds >= 0) return progress.where + QStringLiteral(" · ETA %1").arg(formatDuration(etaSeconds));
  if (live && progress.stageEtaSeconds >= 0)
    return progress.where + QStringLiteral(" · this stage ends in ~%1").arg(formatDuration(progress.stageEtaSeconds));
  if (live) return progress.where + QStringLiteral(" · ETA after the next progress");
  return progress.where.isEmpty() ? QString::fromStdString(status) : progress.where;
}
