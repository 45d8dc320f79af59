// The Datasets page's long work, off the UI thread and apart from the grid's
// queries (IndexWorker): the statistics of a dataset, per-sample evaluations
// (expnet::evaluate_samples, resumable, with progress and Cancel), the list
// of a store's evaluations, and captioning one image with the loaded model.
#pragma once

#include <QMetaType>
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <vector>

#include "expnet/data/dataset.h"
#include "expnet/metrics/sample_evaluation.h"

namespace expnet {
class Captioner;
}

struct EvaluationJob {
  QString model, checkpoint, vocab, device = QStringLiteral("cpu");
  QString dataset, split, db;
  int limit = 0;
  int beam = 3;  // 1 = greedy
};

class AnalysisWorker : public QObject {
  Q_OBJECT
 public:
  // Thread-safe: stops the evaluation before its next image (captions kept).
  void cancelEvaluation() { cancelled_ = true; }
  void armEvaluation() { cancelled_ = false; }

  // Run in the worker's thread.
  void computeStats(const QString& dataset, int minCount);
  void evaluate(const EvaluationJob& job);
  void listEvaluations(const QString& db);
  // One evaluation's per-image captions and scores (to compare with another).
  void loadEvaluation(const QString& db, qint64 id);
  void captionImage(const QString& file, std::shared_ptr<expnet::Captioner> captioner);

 signals:
  // The engine's results as they are: the widgets say them (no JSON between page and worker).
  void statsReady(const QString& dataset, const expnet::DatasetStats& stats);
  void statsFailed(const QString& dataset, const QString& error);
  void evaluationProgress(int done, int total);
  void evaluated(const expnet::SampleEvaluation& evaluation);
  void evaluationFailed(const QString& error);
  void evaluationCancelled(int done);
  void evaluationsListed(const QString& db, const std::vector<expnet::SampleEvaluation>& evaluations);  // newest first
  void evaluationLoaded(qint64 id, const std::vector<expnet::SampleScore>& samples);
  void imageCaptioned(const QString& file, const QString& caption, const QString& error);

 private:
  std::atomic<bool> cancelled_{false};
};

Q_DECLARE_METATYPE(expnet::DatasetStats)
Q_DECLARE_METATYPE(expnet::SampleEvaluation)
Q_DECLARE_METATYPE(std::vector<expnet::SampleEvaluation>)
Q_DECLARE_METATYPE(std::vector<expnet::SampleScore>)
