// LibTorch before Qt: Qt's `slots` macro breaks LibTorch headers included after it.
#include <ATen/core/Tensor.h>

#include "caption/captionworker.h"

#include <QFileInfo>

#include <opencv2/imgproc.hpp>

#include "common/localpath.h"
#include "expnet/image/image_decode.h"
#include "expnet/model/demo_model.h"
#include "expnet/system/system.h"

namespace {
// Thrown from on_step to leave the search as soon as the user cancels.
struct Cancelled {};

constexpr int kThumbnailSize = 72;  // the page shows thumbnails in 72 x 72 cells

QImage thumbnailOf(const cv::Mat& rgb) {
  const double scale = double(kThumbnailSize) / std::max(rgb.cols, rgb.rows);
  cv::Mat small;
  cv::resize(rgb, small, cv::Size(std::max(1, int(rgb.cols * scale)), std::max(1, int(rgb.rows * scale))), 0, 0,
             cv::INTER_AREA);
  // copy(): the QImage must own its pixels once `small` goes away.
  return QImage(small.data, small.cols, small.rows, int(small.step), QImage::Format_RGB888).copy();
}

// A built-in model (the demo model or its PNAIC students, which know only
// shapes too): its name alone, or its file named as the checkpoint.
bool isDemoModel(const ModelRequest& request) {
  if (request.checkpoint.isEmpty()) return expnet::is_builtin_model_name(request.model.toStdString());
  const QString checkpoint = QFileInfo(request.checkpoint).canonicalFilePath();
  for (const auto& name : expnet::builtin_model_names()) {
    try {
      if (QFileInfo(QString::fromStdString(expnet::builtin_model_path(name))).canonicalFilePath() == checkpoint) return true;
    } catch (const std::runtime_error&) {
      // not installed: cannot be this checkpoint
    }
  }
  return false;
}

}  // namespace

QString modelDisplayName(const ModelRequest& request) {
  // Captioner::load takes a built-in name without a checkpoint as the bundled file.
  if (request.checkpoint.isEmpty() && expnet::is_builtin_model_name(request.model.toStdString()))
    return request.model == QStringLiteral("demo") ? QStringLiteral("built-in demo model")
                                                  : QStringLiteral("built-in model %1").arg(request.model);
  const QString checkpoint =
      request.checkpoint.isEmpty() ? QStringLiteral("random weights") : QFileInfo(request.checkpoint).fileName();
  const QString model = request.model.isEmpty() ? QString() : QFileInfo(request.model).fileName();
  return model.isEmpty() ? checkpoint : QStringLiteral("%1 (%2)").arg(checkpoint, model);
}

CaptionWorker::CaptionWorker() {
  qRegisterMetaType<LoadedModel>();
  qRegisterMetaType<expnet::CaptionedImage>();
}

CaptionWorker::~CaptionWorker() = default;

void CaptionWorker::loadModel(const ModelRequest& request) {
  try {
    // Threads are process-wide in torch; set here, in the worker, before the load
    // (apply_runtime also checks the device and says what to do when it is missing).
    if (request.threads >= 0) expnet::apply_runtime({request.threads, request.device.toStdString()});
    expnet::ModelSource source;
    source.model = request.model.toStdString();
    source.checkpoint = request.checkpoint.toStdString();
    source.vocab = request.vocab.toStdString();
    source.device = request.device.toStdString();
    auto captioner = expnet::Captioner::load(source);
    std::string precisionNote;
    const auto precision = expnet::effective_precision(
        expnet::parse_precision(request.precision.toStdString(), source.device), source.device, &precisionNote);
    captioner->set_precision(precision);
    LoadedModel loaded;
    loaded.name = modelDisplayName(request);
    loaded.device = request.device;
    loaded.precision = QString::fromStdString(expnet::precision_name(precision));
    loaded.precisionNote = QString::fromStdString(precisionNote);
    loaded.threads = expnet::torch_threads();
    loaded.maxSeqLen = int(captioner->config().max_seq_len);
    loaded.loadMs = captioner->load_ms();
    loaded.demo = isDemoModel(request);
    loaded.pnaic = captioner->config().is_pnaic();
    loaded.carriedDecoding = captioner->carried_decoding().to_json();
    captioner_ = std::move(captioner);
    emit modelLoaded(loaded);
  } catch (const std::exception& e) {
    emit modelFailed(QString::fromStdString(e.what()));
  }
}

void CaptionWorker::caption(const QVector<CaptionJob>& jobs, const expnet::DecodingOptions& options, int epoch) {
  for (const auto& job : jobs) {
    if (epoch != cancelEpoch_.load()) {
      emit itemCancelled(job.row);
      continue;
    }
    if (!captioner_) {
      emit itemFailed(job.row, QStringLiteral("no model loaded: load a checkpoint and vocabulary first"));
      continue;
    }
    try {
      // The engine's own call, in stages: the thumbnail first, then the words as the search advances.
      expnet::DecodingOptions staged = options;
      staged.on_step = [&](const expnet::StepUpdate& update) {
        if (epoch != cancelEpoch_.load()) throw Cancelled{};
        emit itemWords(job.row, QString::fromStdString(captioner_->vocabulary().decode_text(update.best)));
      };
      const auto result = captioner_->caption_file(localPathBytes(job.path), staged,  // the exact bytes of a non-UTF-8 name
                                                   [&](const cv::Mat& rgb) { emit itemStarted(job.row, thumbnailOf(rgb)); });
      if (result.error.empty())
        emit itemDone(job.row, result);
      else
        emit itemFailed(job.row, QString::fromStdString(result.error));
    } catch (const Cancelled&) {
      emit itemCancelled(job.row);
    } catch (const std::exception& e) {
      emit itemFailed(job.row, QString::fromStdString(e.what()));
    }
  }
}
