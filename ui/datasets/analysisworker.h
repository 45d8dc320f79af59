// The Datasets page's long work, off the UI thread and apart from the grid's
// queries (IndexWorker): the statistics of a dataset, per-sample evaluations
// (expnet::evaluate_samples, resumable, with progress and Cancel), the list
// of a store's evaluations, and captioning one image with the loaded model.
#pragma once

#include <QJsonArray>
#include <QJsonObject>
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

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
  // {images, captions, images_per_split, captions_per_split, length_histogram: {tokens: captions},
  //  top_words: [[word, count]], vocabulary_by_min_count: {min_count: size}, mean_caption_length}
  void statsReady(const QString& dataset, const QJsonObject& stats);
  void statsFailed(const QString& dataset, const QString& error);
  void evaluationProgress(int done, int total);
  // evaluation: {id, db, model, split, resumed, corpus: {...}, images}
  void evaluated(const QJsonObject& evaluation);
  void evaluationFailed(const QString& error);
  void evaluationCancelled(int done);
  // [{id, model, split, options, created, checkpoint_sha256, images}]
  void evaluationsListed(const QString& db, const QJsonArray& evaluations);
  // samples: {cocoid: {caption, cider_d, bleu4}}
  void evaluationLoaded(qint64 id, const QJsonObject& samples);
  void imageCaptioned(const QString& file, const QString& caption, const QString& error);

 private:
  std::atomic<bool> cancelled_{false};
};
