#include "training/trainingprocess.h"

#include "common/hostcommand.h"

#include <QRegularExpression>

#include <csignal>

bool TrainProgressLine::parse(const QString& line, TrainProgressLine* out) {
  static const QRegularExpression pattern(QStringLiteral(
      R"(^\[(.+)\] epoch (\d+)/(\d+) \[[#.]*\] (\d+)/(\d+) ([0-9.eE+-]+|nan|inf) img/s ETA \S+ loss (\S+))"));
  const auto match = pattern.match(line);
  if (!match.hasMatch()) return false;
  out->stage = match.captured(1);
  out->epoch = match.captured(2).toInt();
  out->epochs = match.captured(3).toInt();
  out->done = match.captured(4).toInt();
  out->total = match.captured(5).toInt();
  out->imagesPerSecond = match.captured(6).toDouble();
  out->loss = match.captured(7).toDouble();
  return true;
}

TrainingProcess::TrainingProcess(QObject* parent) : QObject(parent), program_(defaultProgram()) {
  connect(&process_, &QProcess::readyReadStandardOutput, this, [this] { readOutput(QProcess::StandardOutput); });
  connect(&process_, &QProcess::readyReadStandardError, this, [this] { readOutput(QProcess::StandardError); });
  connect(&process_, &QProcess::started, this, &TrainingProcess::started);
  connect(&process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
    if (error == QProcess::FailedToStart)
      emit failedToStart(QStringLiteral("cannot start '%1': %2. Build or install `expnet` next to expnet-studio, "
                                        "or set EXPNET_CLI to its path.")
                             .arg(program_, process_.errorString()));
  });
  connect(&process_, &QProcess::finished, this, [this](int exitCode, QProcess::ExitStatus status) {
    readOutput(QProcess::StandardOutput);
    readOutput(QProcess::StandardError);
    flushPartial(QProcess::StandardOutput);
    flushPartial(QProcess::StandardError);
    emit finished(exitCode, status == QProcess::CrashExit);
  });
}

TrainingProcess::~TrainingProcess() {
  // Closing the studio stops the trainer the same way Stop does (it checkpoints).
  if (isRunning()) {
    disconnect(&process_, nullptr, this, nullptr);
    requestStop();
    if (!process_.waitForFinished(30000)) process_.kill();
    process_.waitForFinished(5000);
  }
}

QString TrainingProcess::defaultProgram() { return HostCommand::program(); }

void TrainingProcess::start(const QString& configFile, const QString& outDir, bool resume, int threads) {
  if (isRunning()) return;
  stopRequested_ = false;
  partial_[0].clear();
  partial_[1].clear();
  QStringList args{QStringLiteral("train"), QStringLiteral("--config"), configFile, QStringLiteral("--out"), outDir};
  if (resume) args << QStringLiteral("--resume");
  if (threads > 0) args << QStringLiteral("--threads") << QString::number(threads);
  commandLine_ = program_ + QLatin1Char(' ') + args.join(QLatin1Char(' '));
  process_.setProgram(program_);
  process_.setArguments(args);
  process_.start();
}

void TrainingProcess::requestStop() {
  if (!isRunning()) return;
  stopRequested_ = true;
  const qint64 pid = process_.processId();
  if (pid > 0) ::kill(static_cast<pid_t>(pid), SIGINT);
}

void TrainingProcess::readOutput(QProcess::ProcessChannel channel) {
  process_.setReadChannel(channel);
  QByteArray& buffer = partial_[channel == QProcess::StandardError ? 1 : 0];
  buffer += process_.readAll();
  // The progress bar redraws with '\r'; log lines end with '\n'.
  qsizetype start = 0;
  for (qsizetype i = 0; i < buffer.size(); ++i) {
    const char c = buffer.at(i);
    if (c != '\n' && c != '\r') continue;
    const QString line = QString::fromUtf8(buffer.constData() + start, i - start).trimmed();
    start = i + 1;
    if (line.isEmpty()) continue;
    TrainProgressLine parsed;
    if (TrainProgressLine::parse(line, &parsed))
      emit progress(parsed);
    else
      emit logLine(line);
  }
  buffer.remove(0, start);
}

void TrainingProcess::flushPartial(QProcess::ProcessChannel channel) {
  QByteArray& buffer = partial_[channel == QProcess::StandardError ? 1 : 0];
  const QString rest = QString::fromUtf8(buffer).trimmed();
  buffer.clear();
  TrainProgressLine parsed;
  if (!rest.isEmpty() && !TrainProgressLine::parse(rest, &parsed)) emit logLine(rest);
}
