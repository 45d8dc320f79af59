// One `expnet` command about a remote host (docs/remote.md) run as a child
// process, so nothing waits on ssh on the UI thread: `hosts check`, `train
// --host`, `runs mirror|stop|fetch --host`, `eval --host`. Arguments go as a list, never
// through a shell. Its stderr comes as lines ('\r' ends one too: fetch redraws
// its progress), and fetch's "N of M bytes" and eval's "N of M images" as progress.
#pragma once

#include <QObject>
#include <QProcess>
#include <QString>
#include <QStringList>

class HostCommand : public QObject {
  Q_OBJECT
 public:
  explicit HostCommand(QObject* parent = nullptr);
  ~HostCommand() override;  // a running child is terminated (its ssh ends with it)

  // The engine the studio runs: $EXPNET_CLI when set, else the `expnet` beside
  // the studio executable (the build and the install put both in one folder),
  // else `expnet` on the PATH.
  static QString program();

  void start(const QStringList& args);
  bool isRunning() const { return process_.state() != QProcess::NotRunning; }
  void terminate();  // SIGTERM
  QString commandLine() const { return commandLine_; }
  QString lastError() const { return lastError_; }  // the last stderr line that was not progress

 signals:
  void errorLine(const QString& line);
  void progress(qint64 done, qint64 total);
  // exitCode -1: it did not start or was killed; `out`: all of its stdout.
  void finished(int exitCode, const QByteArray& out);

 private:
  void readErrors(bool flush);

  QProcess process_;
  QString commandLine_, lastError_;
  QByteArray out_, partial_;
};
