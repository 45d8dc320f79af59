// Runs the Captioner off the UI thread. The worker object lives in its own
// QThread; the page calls its slots through queued connections and hears back
// through queued signals, so LibTorch never runs on the UI thread. Words stream
// out of the decoder's on_step callback as itemWords signals.
#pragma once

#include <QImage>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QVector>

#include <atomic>
#include <memory>

#include "expnet/decode/captioner.h"

struct ModelRequest {
  QString model, checkpoint, vocab, device = QStringLiteral("cpu");
  QString precision = QStringLiteral("fp32");  // fp32, bf16, int8 or auto (expnet/model/precision.h)
  int threads = -1;  // torch intra-op threads applied before loading; 0 = all cores, -1 = leave as they are
};

// "built-in demo model", "checkpoint.pth (official)": how the page and the status bar name a model.
QString modelDisplayName(const ModelRequest& request);

// What the page learns of a model the worker loaded.
struct LoadedModel {
  QString name;  // modelDisplayName()
  QString device, precision;
  QString precisionNote;  // why the precision asked for is not the one running, if so
  int threads = 0;
  int maxSeqLen = 0;
  double loadMs = 0;
  bool demo = false;   // a built-in model (knows only shapes)
  bool pnaic = false;  // decodes greedily only
  std::string carriedDecoding;  // CarriedDecoding::to_json(): the decoding options its checkpoint carries
};
Q_DECLARE_METATYPE(LoadedModel)
Q_DECLARE_METATYPE(expnet::CaptionedImage)

struct CaptionJob {
  int row = 0;
  QString path;
};

class CaptionWorker : public QObject {
  Q_OBJECT
 public:
  CaptionWorker();
  ~CaptionWorker() override;

  // Thread-safe: abandons the image being decoded and every job queued so far.
  void cancelAll() { ++cancelEpoch_; }
  int cancelEpoch() const { return cancelEpoch_.load(); }
  // The loaded model, shared with other pages (StudioContext). Read it only
  // after modelLoaded(): loadModel() is the only writer.
  std::shared_ptr<expnet::Captioner> captioner() const { return captioner_; }

 public:
  // Run in the worker's thread (queued functors from the page).
  void loadModel(const ModelRequest& request);
  // `epoch` is cancelEpoch() when the jobs were submitted: jobs from an older
  // epoch were cancelled and are reported as such without running.
  void caption(const QVector<CaptionJob>& jobs, const expnet::DecodingOptions& options, int epoch);

 signals:
  void modelLoaded(const LoadedModel& model);
  void modelFailed(const QString& error);
  void itemStarted(int row, const QImage& thumbnail);
  void itemWords(int row, const QString& partialCaption);
  void itemDone(int row, const expnet::CaptionedImage& result);
  void itemFailed(int row, const QString& error);
  void itemCancelled(int row);

 private:

  std::shared_ptr<expnet::Captioner> captioner_;
  std::atomic<int> cancelEpoch_{0};
};
