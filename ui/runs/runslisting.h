// What the Runs page reads from the run stores, off the UI thread: one row per
// run of every store this machine knows (expnet/train/run_registry.h) plus the
// stores opened by hand, with the status that is true now (the trainer's lock,
// expnet/train/run_lock.h); and, for the runs selected, their curves, config
// and sample captions. Nothing here throws: a store that cannot be read (newer
// version, corrupted) becomes a problem line and is never written to.
#pragma once

#include <QJsonObject>
#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QVector>

#include <memory>
#include <vector>

#include "expnet/train/run_store.h"

// A run's curve rows, shared (never copied) by the page's details and the
// curves: tens of MB for 50 runs of 10,000 steps.
struct RunRows {
  std::vector<expnet::StepRecord> steps;              // as RunStore::steps returns them (by step)
  std::vector<expnet::ValidationRecord> validations;  // as RunStore::validations returns them
};
using SharedRunRows = std::shared_ptr<const RunRows>;

struct RunRow {
  QString storePath;  // absolute
  QString host;       // "" for this computer; the host of a mirror store (expnet/remote/run_mirror.h)
  expnet::RunInfo info;
  QString status;     // run_status(): running, finished, failed, interrupted, created
  bool live = false;
  QString recipe;     // describeRecipe(): the dataset and the stages
  QString modelSize;  // "d 128 · 2+2 layers"
  QString key() const { return runKey(storePath, info.id); }
  static QString runKey(const QString& storePath, int64_t id) { return storePath + QLatin1Char('#') + QString::number(id); }
};

struct StoreProblem {
  QString path, error;
};

struct RunsListing {
  std::vector<RunRow> rows;          // newest first
  QVector<StoreProblem> problems;    // stores that could not be read
  QStringList missingStores;         // registered, but the file is gone
  QStringList stores;                // every store read
};
Q_DECLARE_METATYPE(RunsListing)

// `extraStores`: stores opened by hand (also read when not registered).
RunsListing loadRunsListing(const QStringList& extraStores);

struct RunDetails {
  QString key, storePath;
  int64_t id = 0;
  QString error;
  QJsonObject config;
  SharedRunRows rows = std::make_shared<RunRows>();  // never null
  std::vector<expnet::SampleCaption> samples;
};
Q_DECLARE_METATYPE(QVector<RunDetails>)

struct RunRef {
  QString storePath;
  int64_t id = 0;
};
QVector<RunDetails> loadRunDetails(const QVector<RunRef>& runs);

// "shapes: xe 27 ep → scst 3 ep": the dataset and the stage plan of a training config.
QString describeRecipe(const QJsonObject& config);
// "d 128 · 3+3 layers" from a training config's model object; empty when absent.
QString describeModelSize(const QJsonObject& config);
