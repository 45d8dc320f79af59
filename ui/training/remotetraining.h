// The Training page's runs on a remote host (docs/remote.md): started detached
// there with `expnet train --host` (it survives the studio quitting and the
// link dropping), followed into this computer's read-only mirror of the host's
// store with `expnet runs mirror --host` (which reconnects with backoff from its
// cursor: no row lost, none twice), stopped with `expnet runs stop --host`. The
// page shows the mirror as it shows a local store.
#pragma once

#include <QJsonObject>
#include <QObject>
#include <QString>
#include <QStringList>

#include <memory>
#include <vector>

#include "common/hostcommand.h"

class RemoteTraining : public QObject {
  Q_OBJECT
 public:
  explicit RemoteTraining(QObject* parent = nullptr);

  // expnet train --host HOST --config CONFIG --out OUT [--resume] [--threads N], the config
  // kept in <data dir>/remote/configs (what was sent); `out` is a folder on the host
  // (relative: to its work folder). Follows the run once it started.
  void launch(const QString& host, const QJsonObject& config, const QString& out, bool resume, int threads);
  // Follows run `runName` of `store` (a path on the host) into its mirror, from the mirror's cursor.
  void follow(const QString& host, const QString& store, const QString& runName);
  // Asks the host's trainer to stop (it checkpoints, then ends "interrupted").
  void stop();
  // The followed run keeps being mirrored in the background (the Runs page shows
  // it, with its host) while the page turns to another; it ends with its run.
  void detach();
  void followInBackground(const QString& host, const QString& store, const QString& runName);
  QList<QStringList> backgroundRuns() const;  // {host, store, run} of each

  bool isActive() const { return launch_.isRunning() || isFollowing(); }
  bool isLaunching() const { return launch_.isRunning(); }
  bool isFollowing() const { return (mirror_ && mirror_->isRunning()) || retryPending_; }
  bool stopRequested() const { return stopRequested_; }
  bool reconnecting() const { return reconnecting_; }
  QString host() const { return host_; }
  QString store() const { return store_; }  // on the host
  QString runName() const { return runName_; }
  QString outDir() const { return out_; }  // on the host
  QString mirrorPath() const;               // this computer's copy of store() (expnet/remote/run_mirror.h)
  QString commandLine() const { return launch_.commandLine(); }
  static QString mirrorPathFor(const QString& host, const QString& store);

 signals:
  void followStarted(const QString& mirrorPath);
  // One sentence naming the host and what to do (launch, stop or follow failed).
  void failed(const QString& reason);
  void message(const QString& text);  // started, stopping, reconnecting to HOST, reconnected
  void logLine(const QString& line);
  void followEnded();  // no followed run is running any more

 private:
  static QStringList mirrorArgs(const QString& host, const QString& store, const QString& runName);
  void dropBackground(HostCommand* mirror);
  void startMirror();
  void onMirrorFinished(int exitCode);
  void retrySoon();  // the mirror again in 2 s

  HostCommand launch_, stop_;
  std::unique_ptr<HostCommand> mirror_;  // a new one per follow: an ended one is deleted later
  struct BackgroundFollow {
    std::unique_ptr<HostCommand> mirror;
    QStringList run;  // host, store, run name
  };
  std::vector<BackgroundFollow> background_;
  QString host_, store_, runName_, out_;
  bool resumed_ = false;  // the launch was a resume: its follow waits for the trainer (--wait-for-start)
  qint64 launchedAtMs_ = 0;
  bool stopRequested_ = false, reconnecting_ = false, retryPending_ = false;
};
