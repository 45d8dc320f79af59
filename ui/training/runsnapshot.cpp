#include "training/runsnapshot.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QtConcurrent>

#include <algorithm>
#include <stdexcept>

RunSnapshot loadRunSnapshot(const QString& storePath, const QString& runName) {
  RunSnapshot s;
  s.storePath = storePath;
  try {
    auto store = expnet::RunStore(storePath.toStdString(), expnet::RunStore::Open::existing);
    s.runs = store.list_runs();
    std::sort(s.runs.begin(), s.runs.end(), [](const auto& a, const auto& b) { return a.id > b.id; });
    if (runName.isEmpty()) {
      if (s.runs.empty()) throw std::runtime_error("run store '" + storePath.toStdString() + "' has no runs yet");
      s.run = s.runs.front();
      const QString folder = QFileInfo(storePath).canonicalPath();
      for (const auto& run : s.runs)
        if (QDir(QString::fromStdString(run.out_dir)).canonicalPath() == folder) {
          s.run = run;
          break;
        }
    } else {
      auto run = store.find_run_by_name(runName.toStdString());
      if (!run) throw std::runtime_error("no run named '" + runName.toStdString() + "' in " + storePath.toStdString() + " yet");
      s.run = *run;
    }
    s.found = true;
    s.config = QJsonDocument::fromJson(QByteArray::fromStdString(s.run.config_json)).object();
    for (const auto& stage : store.stages(s.run.id)) s.stageNames << QString::fromStdString(stage.second);
    s.steps = store.steps(s.run.id);
    s.validations = store.validations(s.run.id);
    auto samples = store.samples(s.run.id);
    if (!samples.empty()) {
      // Only the latest validation's captions: (stage, epoch) of the last row.
      const auto last = std::max_element(samples.begin(), samples.end(), [](const auto& a, const auto& b) {
        return std::make_pair(a.stage, a.epoch) < std::make_pair(b.stage, b.epoch);
      });
      const auto key = std::make_pair(last->stage, last->epoch);
      for (const auto& sample : samples)
        if (std::make_pair(sample.stage, sample.epoch) == key) s.samples.push_back(sample);
    }
  } catch (const std::exception& e) {
    s.error = QString::fromStdString(e.what());
  }
  return s;
}

RunStorePoller::RunStorePoller(QObject* parent) : QObject(parent) {
  qRegisterMetaType<RunSnapshot>();
  timer_.setInterval(500);
  connect(&timer_, &QTimer::timeout, this, &RunStorePoller::pollNow);
  connect(&watcher_, &QFutureWatcher<RunSnapshot>::finished, this, [this] {
    const int generation = inFlightGeneration_;
    inFlightGeneration_ = -1;
    if (generation != generation_) {  // followed another run meanwhile: read that one
      pollNow();
      return;
    }
    waitingForFirst_ = false;
    emit snapshotReady(watcher_.result());
  });
}

RunStorePoller::~RunStorePoller() { watcher_.waitForFinished(); }

void RunStorePoller::follow(const QString& storePath, const QString& runName) {
  storePath_ = storePath;
  runName_ = runName;
  ++generation_;
  waitingForFirst_ = true;
  setIdle(false);
  timer_.start();
  pollNow();
}

void RunStorePoller::stop() {
  timer_.stop();
  ++generation_;
  storePath_.clear();
  runName_.clear();
  waitingForFirst_ = false;
}

void RunStorePoller::pollNow() {
  if (storePath_.isEmpty() || inFlightGeneration_ >= 0) return;
  inFlightGeneration_ = generation_;
  watcher_.setFuture(QtConcurrent::run(loadRunSnapshot, storePath_, runName_));
}
