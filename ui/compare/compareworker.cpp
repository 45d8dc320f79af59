// LibTorch before Qt: Qt's `slots` macro breaks LibTorch headers included after it.
#include <ATen/core/Tensor.h>

#include "compare/compareworker.h"

#include "common/localpath.h"

#include <QFileInfo>
#include <QImageReader>

#include <chrono>

#include "expnet/decode/captioner.h"

namespace {
constexpr int kThumbnailSize = 72;  // the page's rows are 72 px thumbnails

// Read at a reduced size where the format allows it (JPEG decodes at 1/8):
// a 20-megapixel photo must not cost its full decode twice.
QImage thumbnailOf(const QString& path) {
  QImageReader reader(path);
  reader.setAutoTransform(true);
  const QSize size = reader.size();
  if (size.isValid() && (size.width() > kThumbnailSize || size.height() > kThumbnailSize))
    reader.setScaledSize(size.scaled(kThumbnailSize, kThumbnailSize, Qt::KeepAspectRatio));
  return reader.read();
}

}  // namespace

void CompareWorker::loadSlot(const SlotRequest& request) {
  slots_.erase(request.slot);  // a failed reload leaves the slot empty, not the previous model
  try {
    const auto start = std::chrono::steady_clock::now();
    const std::string device = request.device.toStdString();
    std::string note;  // the Caption page, where the precision is chosen, shows why it fell back
    const auto precision =
        expnet::effective_precision(expnet::parse_precision(request.precision.toStdString(), device), device, &note);
    auto model = expnet::load_comparison_model(request.spec.toStdString(), request.vocab.toStdString(),
                                               request.pnaic ? expnet::ComparisonRole::pnaic : expnet::ComparisonRole::aic,
                                               device, precision);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const int groups = static_cast<int>(model.captioner->config().pnaic_groups);
    const QString file = QString::fromStdString(model.file);
    slots_[request.slot] = std::move(model);
    emit slotLoaded(request.slot, file, groups, ms);
  } catch (const std::exception& e) {
    emit slotFailed(request.slot, QString::fromStdString(e.what()));
  }
}

void CompareWorker::removeSlot(int slot) { slots_.erase(slot); }

bool CompareWorker::models(const expnet::ComparisonModel** aic, std::vector<expnet::ComparisonModel>* pnaic,
                           QString* error) const {
  *aic = nullptr;
  pnaic->clear();
  for (const auto& [slot, model] : slots_) {
    if (slot == 0)
      *aic = &model;
    else
      pnaic->push_back(model);
  }
  if (!*aic) {
    *error = QStringLiteral("No AIC model is loaded: load one in the AIC slot (e.g. demo)");
    return false;
  }
  if (pnaic->empty()) {
    *error = QStringLiteral("No PNAIC model is loaded: load one in a PNAIC slot (e.g. pnaic-demo-k5)");
    return false;
  }
  return true;
}

void CompareWorker::compareImages(int batch, const QStringList& images, int beam) {
  if (batch < firstLiveBatch_) return;
  for (const auto& image : images) emit thumbnailReady(image, thumbnailOf(image));
  const expnet::ComparisonModel* aic = nullptr;
  std::vector<expnet::ComparisonModel> pnaic;
  QString error;
  if (!models(&aic, &pnaic, &error)) {
    emit batchFailed(batch, error);
    return;
  }
  expnet::ComparisonRequest request;
  request.beam = beam;
  for (const auto& image : images) request.images.push_back(localPathBytes(image));  // non-UTF-8 names keep their bytes
  request.cancelled = [this, batch] { return batch < firstLiveBatch_.load(); };
  request.captioned = [&](size_t index, const std::vector<expnet::ModeSummary>& modes) {
    ComparedImage row;
    row.image = images[static_cast<int>(index)];
    for (const auto& mode : modes) {
      if (index >= mode.captions.size()) continue;
      row.modes << QString::fromStdString(mode.name);
      row.captions.push_back(mode.captions[index]);
    }
    emit rowReady(batch, row);
  };
  try {
    const auto result = expnet::compare_decoding(*aic, pnaic, request);
    QStringList modes;
    for (const auto& mode : result.modes) modes << QString::fromStdString(mode.name);
    emit batchFinished(batch, modes);
  } catch (const expnet::ComparisonCancelled&) {
    // stale: the page no longer shows these rows' modes
  } catch (const std::exception& e) {
    emit batchFailed(batch, QString::fromStdString(e.what()));
  }
}

void CompareWorker::evaluate(const EvaluationRequest& evaluation) {
  const expnet::ComparisonModel* aic = nullptr;
  std::vector<expnet::ComparisonModel> pnaic;
  QString error;
  if (!models(&aic, &pnaic, &error)) {
    emit evaluationFailed(error);
    return;
  }
  expnet::ComparisonRequest request;
  request.beam = evaluation.beam;
  request.cancelled = [this] { return cancelled_.load(); };
  request.progress = [this, &request](size_t, size_t done) {
    emit evaluationProgress(static_cast<int>(done), static_cast<int>(request.images.size()));
  };
  try {
    expnet::add_dataset_images(evaluation.dataset.toStdString(), evaluation.split.toStdString(),
                               static_cast<size_t>(std::max(0, evaluation.limit)), request);
    emit evaluationProgress(0, static_cast<int>(request.images.size()));
    emit evaluated(expnet::compare_decoding(*aic, pnaic, request));
  } catch (const expnet::ComparisonCancelled&) {
    emit evaluationCancelled();
  } catch (const std::exception& e) {
    emit evaluationFailed(QString::fromStdString(e.what()));
  }
}
