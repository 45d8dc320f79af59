// LibTorch before Qt: Qt's `slots` macro breaks LibTorch headers included after it.
#include <ATen/core/Tensor.h>

#include "caption/captionworker.h"

#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>

#include <c10/core/GradMode.h>
#include <opencv2/imgproc.hpp>

#include <chrono>

#include "common/localpath.h"
#include "expnet/image/image_decode.h"
#include "expnet/model/demo_model.h"
#include "expnet/system/system.h"

namespace {
using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

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

CaptionWorker::CaptionWorker() = default;

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
    const auto& config = captioner->config();
    QJsonObject details{{"checkpoint", request.checkpoint},
                        {"model", request.model},
                        {"vocab", request.vocab},
                        {"device", request.device},
                        {"precision", QString::fromStdString(expnet::precision_name(precision))},
                        {"precision_note", QString::fromStdString(precisionNote)},
                        {"threads", expnet::torch_threads()},
                        {"vocabulary_size", qint64(captioner->vocabulary().size())},
                        {"image_size", qint64(config.swin_img_size)},
                        {"max_seq_len", qint64(config.max_seq_len)},
                        {"load_ms", captioner->load_ms()},
                        {"demo", isDemoModel(request)},
                        {"pnaic", config.is_pnaic()},
                        {"decoding", QJsonDocument::fromJson(QByteArray::fromStdString(
                                                                 captioner->carried_decoding().to_json()))
                                         .object()}};
    captioner_ = std::move(captioner);
    emit modelLoaded(modelDisplayName(request), details);
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
      emit itemDone(job.row, captionOne(job, options, epoch));
    } catch (const Cancelled&) {
      emit itemCancelled(job.row);
    } catch (const std::exception& e) {
      emit itemFailed(job.row, QString::fromStdString(e.what()));
    }
  }
}

// The same steps as Captioner::caption_files with batch 1, split so the page
// sees the thumbnail first, then the words as the search advances.
QJsonObject CaptionWorker::captionOne(const CaptionJob& job, const expnet::DecodingOptions& requested, int epoch) {
  c10::NoGradGuard noGrad;
  expnet::DecodingOptions options = captioner_->complete(requested);
  options.validate();
  const auto& vocab = captioner_->vocabulary();
  options.on_step = [&](const expnet::StepUpdate& update) {
    if (epoch != cancelEpoch_.load()) throw Cancelled{};
    emit itemWords(job.row, QString::fromStdString(vocab.decode_text(update.best)));
  };

  auto start = Clock::now();
  const cv::Mat rgb = expnet::load_image_rgb(localPathBytes(job.path));  // the exact bytes of a non-UTF-8 name
  const at::Tensor input = captioner_->preprocess(rgb);
  const double preprocessMs = msSince(start);
  emit itemStarted(job.row, thumbnailOf(rgb));

  start = Clock::now();
  const at::Tensor encoded = captioner_->encode(input);
  const double encodeMs = msSince(start);

  start = Clock::now();
  const auto results = captioner_->decode_encoded(encoded, options);  // AIC or PNAIC alike
  const double decodeMs = msSince(start);

  QJsonArray captions;
  for (const auto& hypothesis : results.at(0).hypotheses)
    captions.append(QJsonObject{{"text", QString::fromStdString(vocab.decode_text(hypothesis.tokens))},
                                {"score", hypothesis.score},
                                {"sum_logprob", hypothesis.sum_logprob}});
  return QJsonObject{{"captions", captions},
                     {"ms", QJsonObject{{"preprocess", preprocessMs}, {"encode", encodeMs}, {"decode", decodeMs}}}};
}
