// `expnet eval --host` for the Datasets page (docs/remote.md): the host
// captions and scores its own copy of the dataset with its device, and the
// result joins the evaluation store of the page's dataset here
// (--home-dataset), where the page shows and sorts by it like any other.
// A child process (HostCommand), so nothing waits on ssh on the UI thread.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>

#include "common/hostcommand.h"
#include "datasets/analysisworker.h"

struct HostEvaluationResult {
  qint64 id = 0;  // in the store here
  int images = 0, resumed = 0;
  double ciderD = 0;
};

class HostEvaluation : public QObject {
  Q_OBJECT
 public:
  explicit HostEvaluation(QObject* parent = nullptr);

  // job.dataset and job.db: this computer's copy and its store; the model's
  // files, `datasetThere` and `deviceThere` are the host's.
  static QStringList arguments(const EvaluationJob& job, const QString& host, const QString& datasetThere,
                               const QString& deviceThere);
  void start(const EvaluationJob& job, const QString& host, const QString& datasetThere, const QString& deviceThere);
  void cancel();  // the host keeps what it captioned: the same evaluation again resumes
  bool running() const { return command_.isRunning(); }

 signals:
  void progress(int done, int total);
  void evaluated(const HostEvaluationResult& result);
  void failed(const QString& error);
  void cancelled();

 private:
  HostCommand command_;
  QString host_;
  bool cancelling_ = false;
};
