// What the Training page shows of one run, read from the run store
// (expnet/train/run_store.h) off the UI thread. SQLite's WAL journal lets this read
// while the `expnet train` child writes; a RunStorePoller re-reads it on a timer.
#pragma once

#include <QDateTime>
#include <QFutureWatcher>
#include <QJsonObject>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QTimer>
#include <QVector>

#include <vector>

#include "expnet/train/run_store.h"

struct RunSnapshot {
  QString storePath;
  QString error;  // why the store or the run could not be read; empty when fine
  bool found = false;
  expnet::RunInfo run;
  QJsonObject config;  // the run's training config (runs.config)
  std::vector<expnet::StepRecord> steps;
  std::vector<expnet::ValidationRecord> validations;
  std::vector<expnet::SampleCaption> samples;  // of the latest validation only
  QVector<QString> stageNames;
  std::vector<expnet::RunInfo> runs;  // every run of the store, newest first
};
Q_DECLARE_METATYPE(RunSnapshot)

// Reads one run: by name; when `runName` is empty the run whose folder holds
// the store, else the newest. Never
// throws: problems land in RunSnapshot::error. A missing store file is not
// created (RunStore would create it).
RunSnapshot loadRunSnapshot(const QString& storePath, const QString& runName);

// Re-reads a run every `intervalMs` in a thread-pool thread; at most one read
// in flight, so a slow disk delays updates but never queues them.
class RunStorePoller : public QObject {
  Q_OBJECT
 public:
  explicit RunStorePoller(QObject* parent = nullptr);
  ~RunStorePoller() override;
  void follow(const QString& storePath, const QString& runName);
  void stop();
  void pollNow();
  void setIntervalMs(int ms) {
    activeMs_ = ms;
    if (!idle_) timer_.setInterval(ms);
  }
  // A run nobody writes (finished, interrupted) is re-read every 5 s only.
  void setIdle(bool idle) {
    idle_ = idle;
    timer_.setInterval(idle ? 5000 : activeMs_);
  }
  QString storePath() const { return storePath_; }
  QString runName() const { return runName_; }
  bool following() const { return !storePath_.isEmpty(); }
  // True from follow() until its first snapshot arrives.
  bool waitingForFirst() const { return waitingForFirst_; }

 signals:
  void snapshotReady(const RunSnapshot& snapshot);

 private:
  QTimer timer_;
  QFutureWatcher<RunSnapshot> watcher_;
  QString storePath_, runName_;
  int generation_ = 0, inFlightGeneration_ = -1;
  bool waitingForFirst_ = false;
  bool idle_ = false;
  int activeMs_ = 500;
};
