#include "common/hostcommand.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>
#include <QStandardPaths>

HostCommand::HostCommand(QObject* parent) : QObject(parent) {
  connect(&process_, &QProcess::readyReadStandardOutput, this, [this] { out_ += process_.readAllStandardOutput(); });
  connect(&process_, &QProcess::readyReadStandardError, this, [this] { readErrors(false); });
  connect(&process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
    if (error != QProcess::FailedToStart) return;
    lastError_ = QStringLiteral("cannot start '%1': %2. Build or install `expnet` next to expnet-studio, or set "
                                "EXPNET_CLI to its path.")
                     .arg(process_.program(), process_.errorString());
    emit finished(-1, QByteArray());
  });
  connect(&process_, &QProcess::finished, this, [this](int exitCode, QProcess::ExitStatus status) {
    out_ += process_.readAllStandardOutput();
    readErrors(true);
    emit finished(status == QProcess::CrashExit ? -1 : exitCode, out_);
  });
}

HostCommand::~HostCommand() {
  if (!isRunning()) return;
  disconnect(&process_, nullptr, this, nullptr);
  process_.terminate();
  if (!process_.waitForFinished(3000)) process_.kill();
  process_.waitForFinished(1000);
}

QString HostCommand::program() {
  const QString fromEnv = qEnvironmentVariable("EXPNET_CLI");
  if (!fromEnv.isEmpty()) return fromEnv;
  const QString besideStudio = QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("expnet"));
  if (QFileInfo(besideStudio).isExecutable()) return besideStudio;
  const QString onPath = QStandardPaths::findExecutable(QStringLiteral("expnet"));
  return onPath.isEmpty() ? besideStudio : onPath;
}

void HostCommand::start(const QStringList& args) {
  if (isRunning()) return;
  out_.clear();
  partial_.clear();
  lastError_.clear();
  commandLine_ = QStringLiteral("expnet ") + args.join(QLatin1Char(' '));
  process_.start(program(), args);
}

void HostCommand::terminate() {
  if (isRunning()) process_.terminate();
}

void HostCommand::readErrors(bool flush) {
  static const QRegularExpression bytes(QStringLiteral(R"(: (\d+) of (\d+) (bytes|images) \(\d+%\)$)"));
  partial_ += process_.readAllStandardError();
  qsizetype start = 0;
  const auto take = [&](qsizetype end) {
    const QString line = QString::fromUtf8(partial_.constData() + start, end - start).trimmed();
    if (line.isEmpty()) return;
    const auto match = bytes.match(line);
    if (match.hasMatch()) {
      emit progress(match.captured(1).toLongLong(), match.captured(2).toLongLong());
      return;
    }
    lastError_ = line.startsWith(QStringLiteral("error: ")) ? line.mid(7) : line;
    emit errorLine(line);
  };
  for (qsizetype i = 0; i < partial_.size(); ++i) {
    if (partial_.at(i) != '\n' && partial_.at(i) != '\r') continue;
    take(i);
    start = i + 1;
  }
  if (flush) {
    take(partial_.size());
    start = partial_.size();
  }
  partial_.remove(0, start);
}
