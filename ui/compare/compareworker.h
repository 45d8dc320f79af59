// Runs the Compare page's engine work off the UI thread: loading each model
// slot, comparing the page's images and evaluating on a dataset, all through
// expnet::compare_decoding (the function `expnet compare` calls). The worker
// lives in its own QThread; the page calls it through queued functors and
// hears back through queued signals carrying the engine's typed results.
#pragma once

#include <QImage>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QStringList>

#include <atomic>
#include <map>

#include "expnet/decode/decoding_comparison.h"

struct SlotRequest {
  int slot = 0;        // the page's slot id (0 = the AIC slot)
  bool pnaic = false;  // which kind the slot takes
  QString spec;        // a built-in name or a checkpoint
  QString vocab;       // the checkpoint's vocabulary when it carries none
  QString device = QStringLiteral("cpu");
  QString precision = QStringLiteral("fp32");  // the studio's (the Caption page's Model box)
};

// One image of the page's comparison: each mode's caption, in the comparison's mode order.
struct ComparedImage {
  QString image;  // as the page's row names it
  QStringList modes;
  std::vector<expnet::ModeCaption> captions;  // captions[m]: by modes[m]
};
Q_DECLARE_METATYPE(ComparedImage)
Q_DECLARE_METATYPE(expnet::ComparisonResult)

struct EvaluationRequest {
  QString dataset, split;
  int limit = 0;
  int beam = 3;
};

class CompareWorker : public QObject {
  Q_OBJECT
 public:
  // Thread-safe: stops the running (or queued) evaluation before its next image.
  void cancelEvaluation() { cancelled_ = true; }
  // Thread-safe: called by the page before it queues an evaluation.
  void armEvaluation() { cancelled_ = false; }
  // Thread-safe: image batches numbered below `batch` stop (their rows are stale).
  void dropBatchesBefore(int batch) { firstLiveBatch_ = batch; }

  // Run in the worker's thread (queued functors from the page).
  void loadSlot(const SlotRequest& request);
  void removeSlot(int slot);
  // Every image by every mode of the loaded slots; rowReady per image.
  void compareImages(int batch, const QStringList& images, int beam);
  void evaluate(const EvaluationRequest& request);

 signals:
  void slotLoaded(int slot, const QString& file, int groups, double loadMs);
  void slotFailed(int slot, const QString& error);
  void thumbnailReady(const QString& image, const QImage& thumbnail);
  void rowReady(int batch, const ComparedImage& row);
  void batchFinished(int batch, const QStringList& modes);
  void batchFailed(int batch, const QString& error);
  void evaluationProgress(int done, int total);
  void evaluated(const expnet::ComparisonResult& result);
  void evaluationFailed(const QString& error);
  void evaluationCancelled();

 private:
  // The loaded AIC model and PNAIC models, or an error saying what is missing.
  bool models(const expnet::ComparisonModel** aic, std::vector<expnet::ComparisonModel>* pnaic, QString* error) const;

  std::map<int, expnet::ComparisonModel> slots_;
  std::atomic<bool> cancelled_{false};
  std::atomic<int> firstLiveBatch_{0};
};
