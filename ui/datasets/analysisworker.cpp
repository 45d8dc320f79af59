// LibTorch before Qt: Qt's `slots` macro breaks LibTorch headers included after it.
#include <ATen/core/Tensor.h>

#include "datasets/analysisworker.h"

#include "expnet/data/dataset.h"
#include "expnet/decode/captioner.h"
#include "expnet/metrics/sample_evaluation.h"

namespace {
// The results cross from the worker's thread to the page's by queued signals.
const bool registered = [] {
  qRegisterMetaType<expnet::DatasetStats>();
  qRegisterMetaType<expnet::SampleEvaluation>();
  qRegisterMetaType<std::vector<expnet::SampleEvaluation>>();
  qRegisterMetaType<std::vector<expnet::SampleScore>>();
  return true;
}();
}  // namespace

void AnalysisWorker::computeStats(const QString& dataset, int minCount) {
  try {
    const expnet::Dataset data = expnet::load_dataset(dataset.toStdString());
    emit statsReady(dataset, expnet::compute_stats(data, minCount, 25));
  } catch (const std::exception& e) {
    emit statsFailed(dataset, QString::fromStdString(e.what()));
  }
}

void AnalysisWorker::evaluate(const EvaluationJob& job) {
  expnet::SampleEvaluationRequest request;
  request.model = job.model.toStdString();
  request.checkpoint = job.checkpoint.toStdString();
  request.vocab = job.vocab.toStdString();
  request.device = job.device.toStdString();
  request.dataset = job.dataset.toStdString();
  request.split = job.split.toStdString();
  request.limit = static_cast<size_t>(std::max(0, job.limit));
  request.db = job.db.toStdString();
  request.options.search = job.beam > 1 ? expnet::SearchKind::Beam : expnet::SearchKind::Greedy;
  request.options.beam_size = std::max(1, job.beam);
  // As `expnet eval --beam B`: the checkpoint's own options (e.g. the demo
  // model's max_word_run) but for the search the panel sets.
  request.use_carried_decoding = true;
  request.given = {"search", "beam_size"};
  int done = 0;
  request.progress = [this, &done](size_t d, size_t total) {
    done = static_cast<int>(d);
    emit evaluationProgress(done, static_cast<int>(total));
  };
  request.cancelled = [this] { return cancelled_.load(); };
  try {
    emit evaluated(expnet::evaluate_samples(request));
  } catch (const expnet::SampleEvaluationCancelled&) {
    emit evaluationCancelled(done);
  } catch (const std::exception& e) {
    emit evaluationFailed(QString::fromStdString(e.what()));
  }
}

void AnalysisWorker::listEvaluations(const QString& db) {
  std::vector<expnet::SampleEvaluation> out;
  try {
    out = expnet::list_sample_evaluations(db.toStdString());
  } catch (const std::exception& e) {
    emit evaluationFailed(QString::fromStdString(e.what()));
  }
  emit evaluationsListed(db, out);
}

void AnalysisWorker::loadEvaluation(const QString& db, qint64 id) {
  std::vector<expnet::SampleScore> samples;
  try {
    samples = expnet::load_sample_evaluation(db.toStdString(), id).per_image;
  } catch (const std::exception& e) {
    emit evaluationFailed(QString::fromStdString(e.what()));
  }
  emit evaluationLoaded(id, samples);
}

void AnalysisWorker::captionImage(const QString& file, std::shared_ptr<expnet::Captioner> captioner) {
  if (!captioner) {
    emit imageCaptioned(file, {}, QStringLiteral("No model is loaded: load one on the Caption page"));
    return;
  }
  try {
    // The model's own decoding options, as the Caption page would use them by default.
    const auto options = captioner->complete(captioner->carried_decoding().apply_to({}));
    const auto result = captioner->caption_files({file.toStdString()}, options).front();
    emit imageCaptioned(file, result.error.empty() ? QString::fromStdString(result.texts.front()) : QString(),
                        QString::fromStdString(result.error));
  } catch (const std::exception& e) {
    emit imageCaptioned(file, {}, QString::fromStdString(e.what()));
  }
}
