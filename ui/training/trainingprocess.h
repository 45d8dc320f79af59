// The `expnet train` child process behind the Training page. A crash of the
// trainer cannot take the studio down; Stop sends SIGINT, on which the trainer
// writes a checkpoint and exits with status 130 (docs/training.md).
#pragma once

#include <QObject>
#include <QProcess>
#include <QString>

// One progress line of the trainer's stderr bar:
// "[xe] epoch 1/8 [####....] 12/40 37.5 img/s ETA 0m21s loss 2.1 CIDEr-D 0.000"
struct TrainProgressLine {
  QString stage;
  int epoch = 0, epochs = 0;  // epoch counts from 1
  int done = 0, total = 0;    // batches of this epoch
  double imagesPerSecond = 0;
  double loss = 0;
  static bool parse(const QString& line, TrainProgressLine* out);
};

class TrainingProcess : public QObject {
  Q_OBJECT
 public:
  explicit TrainingProcess(QObject* parent = nullptr);
  ~TrainingProcess() override;

  // HostCommand::program(): $EXPNET_CLI, the `expnet` beside the studio, or on the PATH.
  static QString defaultProgram();
  void setProgram(const QString& program) { program_ = program; }
  QString program() const { return program_; }

  // expnet train --config CONFIG --out OUT [--resume] --threads N
  void start(const QString& configFile, const QString& outDir, bool resume, int threads);
  // SIGINT: the trainer checkpoints after the current step and exits.
  void requestStop();
  bool isRunning() const { return process_.state() != QProcess::NotRunning; }
  bool stopRequested() const { return stopRequested_; }
  qint64 processId() const { return process_.processId(); }
  QString commandLine() const { return commandLine_; }

 signals:
  void started();
  void logLine(const QString& line);
  void progress(const TrainProgressLine& line);
  // exitCode 130 = interrupted with a checkpoint; crashed = killed by a signal.
  void finished(int exitCode, bool crashed);
  void failedToStart(const QString& reason);

 private:
  void readOutput(QProcess::ProcessChannel channel);
  void flushPartial(QProcess::ProcessChannel channel);

  QProcess process_;
  QString program_;
  QString commandLine_;
  QByteArray partial_[2];  // unterminated text per channel
  bool stopRequested_ = false;
};
