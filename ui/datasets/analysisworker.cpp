// LibTorch before Qt: Qt's `slots` macro breaks LibTorch headers included after it.
#include <ATen/core/Tensor.h>

#include "datasets/analysisworker.h"

#include <map>

#include "expnet/data/dataset.h"
#include "expnet/decode/captioner.h"
#include "expnet/metrics/sample_evaluation.h"

namespace {
QJsonObject countsJson(const std::map<std::string, size_t>& counts) {
  QJsonObject out;
  for (const auto& [key, value] : counts) out.insert(QString::fromStdString(key), static_cast<qint64>(value));
  return out;
}

QJsonObject evaluationJson(const expnet::SampleEvaluation& e) {
  QJsonObject corpus;
  for (const auto& [key, value] : e.corpus) corpus.insert(QString::fromStdString(key), value);
  return {{"id", static_cast<qint64>(e.id)},
          {"db", QString::fromStdString(e.db)},
          {"model", QString::fromStdString(e.model)},
          {"split", QString::fromStdString(e.split)},
          {"options", QString::fromStdString(e.options)},
          {"created", QString::fromStdString(e.created)},
          {"checkpoint_sha256", QString::fromStdString(e.checkpoint_sha256)},
          {"resumed", static_cast<qint64>(e.resumed)},
          {"images", static_cast<qint64>(e.per_image.empty() ? e.samples : e.per_image.size())},
          {"corpus", corpus}};
}
}  // namespace

void AnalysisWorker::computeStats(const QString& dataset, int minCount) {
  try {
    const expnet::Dataset data = expnet::load_dataset(dataset.toStdString());
    const expnet::DatasetStats stats = expnet::compute_stats(data, minCount, 25);
    QJsonObject histogram;
    for (const auto& [length, count] : stats.caption_length_histogram)
      histogram.insert(QString::number(length), static_cast<qint64>(count));
    QJsonArray top;
    for (const auto& [word, count] : stats.top_words) top.append(QJsonArray{QString::fromStdString(word), static_cast<qint64>(count)});
    QJsonObject byMinCount;
    for (const auto& [m, size] : stats.vocabulary_size_by_min_count)
      byMinCount.insert(QString::number(m), static_cast<qint64>(size));
    emit statsReady(dataset, {{"images", static_cast<qint64>(stats.images)},
                              {"captions", static_cast<qint64>(stats.captions)},
                              {"images_per_split", countsJson(stats.images_per_split)},
                              {"captions_per_split", countsJson(stats.captions_per_split)},
                              {"length_histogram", histogram},
                              {"mean_caption_length", stats.mean_caption_length},
                              {"top_words", top},
                              {"vocabulary_by_min_count", byMinCount},
                              {"training_coverage", stats.training_coverage},
                              {"eval_coverage", stats.eval_coverage}});
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
    emit evaluated(evaluationJson(expnet::evaluate_samples(request)));
  } catch (const expnet::SampleEvaluationCancelled&) {
    emit evaluationCancelled(done);
  } catch (const std::exception& e) {
    emit evaluationFailed(QString::fromStdString(e.what()));
  }
}

void AnalysisWorker::listEvaluations(const QString& db) {
  QJsonArray out;
  try {
    for (const auto& e : expnet::list_sample_evaluations(db.toStdString())) out.append(evaluationJson(e));
  } catch (const std::exception& e) {
    emit evaluationFailed(QString::fromStdString(e.what()));
  }
  emit evaluationsListed(db, out);
}

void AnalysisWorker::loadEvaluation(const QString& db, qint64 id) {
  QJsonObject samples;
  try {
    for (const auto& s : expnet::load_sample_evaluation(db.toStdString(), id).per_image)
      samples.insert(QString::number(s.cocoid),
                     QJsonObject{{"caption", QString::fromStdString(s.caption)}, {"cider_d", s.cider_d}, {"bleu4", s.bleu4}});
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
