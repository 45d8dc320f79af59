#include "training/remotetraining.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTimer>

#include "expnet/remote/run_mirror.h"
#include "expnet/system/atomic_file.h"
#include "expnet/system/paths.h"

namespace {
// After a launch, how long a follow that finds the run not (yet) running is tried again:
// the trainer prepares its data before it takes the run (docs/remote.md).
constexpr qint64 kStartGraceMs = 5 * 60 * 1000;
}  // namespace

RemoteTraining::RemoteTraining(QObject* parent) : QObject(parent) {
  connect(&launch_, &HostCommand::errorLine, this, &RemoteTraining::logLine);
  connect(&launch_, &HostCommand::finished, this, [this](int exitCode, const QByteArray& out) {
    const QJsonObject report = QJsonDocument::fromJson(out.left(out.indexOf('\n'))).object();
    const QString status = report.value(QStringLiteral("status")).toString();
    if (exitCode != 0 || (status != QLatin1String("started") && status != QLatin1String("finished"))) {
      emit logLine(launch_.lastError());
      emit failed(launch_.lastError().isEmpty() ? QStringLiteral("host '%1': expnet train --host failed (status %2)")
                                                      .arg(host_)
                                                      .arg(exitCode)
                                                : launch_.lastError());
      return;
    }
    store_ = report.value(QStringLiteral("store")).toString();
    emit logLine(QStringLiteral("started on %1: pid %2, log %3 (in %4)")
                     .arg(host_)
                     .arg(report.value(QStringLiteral("pid")).toInteger())
                     .arg(report.value(QStringLiteral("log")).toString(), report.value(QStringLiteral("work_dir")).toString()));
    emit message(status == QLatin1String("finished")
                     ? QStringLiteral("The run on %1 finished already; its state is copied here.").arg(host_)
                     : QStringLiteral("Running on %1; following it here.").arg(host_));
    startMirror();
  });
  connect(&stop_, &HostCommand::finished, this, [this](int exitCode, const QByteArray&) {
    if (exitCode == 0) return;  // the trainer checkpoints and ends; the mirror shows it
    stopRequested_ = false;
    emit failed(stop_.lastError());
  });
}

QString RemoteTraining::mirrorPathFor(const QString& host, const QString& store) {
  return QString::fromStdString(expnet::mirror_store_path(host.toStdString(), store.toStdString()));
}

QString RemoteTraining::mirrorPath() const { return store_.isEmpty() ? QString() : mirrorPathFor(host_, store_); }

void RemoteTraining::launch(const QString& host, const QJsonObject& config, const QString& out, bool resume, int threads) {
  if (launch_.isRunning()) return;
  detach();  // a follow that has not seen its "end" yet (Resume pressed at once) goes on in the background
  host_ = host;
  out_ = out;
  runName_ = config.value(QStringLiteral("name")).toString();
  // The config travels to the host in the request; this copy is what was sent.
  const QString dir = QDir(QString::fromStdString(expnet::data_dir())).filePath(QStringLiteral("remote/configs"));
  const QString configFile = QDir(dir).filePath(QString::number(QDateTime::currentMSecsSinceEpoch()) + QStringLiteral(".json"));
  try {
    QDir().mkpath(dir);
    expnet::write_file_atomic(configFile.toStdString(), QJsonDocument(config).toJson().toStdString());
  } catch (const std::exception& e) {
    emit failed(QString::fromStdString(e.what()));
    return;
  }
  store_ = out + QStringLiteral("/runs.sqlite");  // as `train --host` reports it: the mirror is named after this text
  stopRequested_ = reconnecting_ = false;
  resumed_ = resume;
  launchedAtMs_ = QDateTime::currentMSecsSinceEpoch();
  QStringList args{QStringLiteral("train"), QStringLiteral("--host"), host,  QStringLiteral("--config"),
                   configFile,              QStringLiteral("--out"),  out,   QStringLiteral("--json")};
  if (resume) args << QStringLiteral("--resume");
  if (threads > 0) args << QStringLiteral("--threads") << QString::number(threads);
  launch_.start(args);
  emit logLine(QStringLiteral("$ %1").arg(launch_.commandLine()));
  emit message(QStringLiteral("%1 %2 on %3…").arg(resume ? QStringLiteral("Resuming") : QStringLiteral("Starting"), runName_, host));
}

void RemoteTraining::follow(const QString& host, const QString& store, const QString& runName) {
  if (isActive()) return;
  host_ = host;
  store_ = store;
  runName_ = runName;
  out_ = QFileInfo(store).path();
  stopRequested_ = reconnecting_ = false;
  launchedAtMs_ = 0;
  resumed_ = false;
  startMirror();
}

void RemoteTraining::startMirror() {
  retryPending_ = false;
  mirror_ = std::make_unique<HostCommand>();
  connect(mirror_.get(), &HostCommand::errorLine, this, [this](const QString& line) {
    emit logLine(line);
    if (line.startsWith(QStringLiteral("reconnecting to "))) {
      reconnecting_ = true;
      emit message(line.section(QStringLiteral(": "), 0, 0) + QStringLiteral(" (the run goes on there)"));
    } else if (line.startsWith(QStringLiteral("reconnected to "))) {
      reconnecting_ = false;
      emit message(QStringLiteral("Reconnected to %1; following the run again.").arg(host_));
    }
  });
  connect(mirror_.get(), &HostCommand::finished, this, [this](int exitCode, const QByteArray&) { onMirrorFinished(exitCode); });
  QStringList args = mirrorArgs(host_, store_, runName_);
  // A resumed run shows how it ended before until its trainer takes it again (after
  // preparing its data): the follow does not take it for ended within the start grace.
  const qint64 sinceLaunchMs = QDateTime::currentMSecsSinceEpoch() - launchedAtMs_;
  if (resumed_ && launchedAtMs_ > 0 && sinceLaunchMs < kStartGraceMs)
    args << QStringLiteral("--wait-for-start") << QString::number((kStartGraceMs - sinceLaunchMs) / 1000.0, 'f', 1);
  mirror_->start(args);
  emit followStarted(mirrorPath());
}

QStringList RemoteTraining::mirrorArgs(const QString& host, const QString& store, const QString& runName) {
  QStringList args{QStringLiteral("runs"), QStringLiteral("mirror"), QStringLiteral("--host"), host, QStringLiteral("--store"), store};
  if (!runName.isEmpty()) args << QStringLiteral("--run") << runName;
  return args;
}

void RemoteTraining::detach() {
  retryPending_ = false;
  if (mirror_ && mirror_->isRunning()) {
    disconnect(mirror_.get(), nullptr, this, nullptr);
    HostCommand* kept = mirror_.get();
    connect(kept, &HostCommand::finished, this, [this, kept] { dropBackground(kept); });
    background_.push_back({std::move(mirror_), {host_, store_, runName_}});
  }
  mirror_.reset();
  host_.clear();
  store_.clear();
  runName_.clear();
  reconnecting_ = stopRequested_ = false;
  launchedAtMs_ = 0;
}

void RemoteTraining::followInBackground(const QString& host, const QString& store, const QString& runName) {
  auto mirror = std::make_unique<HostCommand>();
  HostCommand* kept = mirror.get();
  connect(kept, &HostCommand::finished, this, [this, kept] { dropBackground(kept); });
  kept->start(mirrorArgs(host, store, runName));
  background_.push_back({std::move(mirror), {host, store, runName}});
}

void RemoteTraining::dropBackground(HostCommand* mirror) {
  for (auto it = background_.begin(); it != background_.end(); ++it)
    if (it->mirror.get() == mirror) {
      it->mirror.release()->deleteLater();  // it is emitting this signal
      background_.erase(it);
      return;
    }
}

QList<QStringList> RemoteTraining::backgroundRuns() const {
  QList<QStringList> runs;
  for (const auto& follow : background_) runs << follow.run;
  return runs;
}

void RemoteTraining::onMirrorFinished(int exitCode) {
  const QString lastError = mirror_ ? mirror_->lastError() : QString();
  reconnecting_ = false;
  if (mirror_) mirror_.release()->deleteLater();  // it is emitting the signal that called this
  const bool recentLaunch = launchedAtMs_ > 0 && QDateTime::currentMSecsSinceEpoch() - launchedAtMs_ < kStartGraceMs;
  // A new run whose trainer is still preparing its data after the follow's own wait (30 s).
  if (exitCode != 0 && recentLaunch && lastError.contains(QStringLiteral("appeared in"))) {
    return retrySoon();
  }
  launchedAtMs_ = 0;
  if (exitCode != 0) {
    emit logLine(lastError);
    emit failed(lastError.isEmpty() ? QStringLiteral("following the run on %1 ended (status %2)").arg(host_).arg(exitCode)
                                              : lastError);
    return;
  }
  emit message(QStringLiteral("The run on %1 is no longer running; its last state is shown (a mirror of the host's store).")
                   .arg(host_));
  emit followEnded();
}

void RemoteTraining::retrySoon() {
  retryPending_ = true;
  QTimer::singleShot(2000, this, [this] {
    if (retryPending_) startMirror();
  });
}

void RemoteTraining::stop() {
  if (stop_.isRunning() || runName_.isEmpty()) return;
  stopRequested_ = true;
  stop_.start({QStringLiteral("runs"), QStringLiteral("stop"), runName_, QStringLiteral("--host"), host_,
               QStringLiteral("--store"), store_});
  emit message(QStringLiteral("Stopping on %1: the trainer writes a checkpoint after the current step…").arg(host_));
}

