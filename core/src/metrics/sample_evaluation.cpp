// Per-sample evaluation (sample_evaluation.h): caption the images of the split
// that the store lacks, one committed row each, then score every image the
// store holds for the evaluation, as `expnet score` scores them.
#include "expnet/metrics/sample_evaluation.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <unordered_map>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "expnet/data/dataset.h"
#include "expnet/data/dataset_index.h"
#include "expnet/decode/captioner.h"
#include "expnet/decode/carried_decoding.h"
#include "expnet/decode/decoding_comparison.h"
#include "expnet/metrics/scorers.h"
#include "expnet/model/demo_model.h"
#include "expnet/system/digest.h"
#include "metrics/sample_evaluation_store.h"

namespace fs = std::filesystem;

namespace expnet {
namespace {

std::string absolute_path(const std::string& path) { return fs::absolute(path).lexically_normal().string(); }

struct EvaluatedModel {
  std::unique_ptr<Captioner> captioner;
  std::string file;   // what its SHA-256 is taken of
  std::string label;  // the evaluations table's `model`: the built-in name or the checkpoint's path
  DecodingOptions options;
  Precision precision = Precision::FP32;
};

EvaluatedModel load_model(const SampleEvaluationRequest& request) {
  const bool builtin = request.checkpoint.empty() && is_builtin_model_name(request.model);
  if (request.checkpoint.empty() && !builtin) {
    std::string names;
    for (const auto& name : builtin_model_names()) names += (names.empty() ? "" : ", ") + name;
    throw std::runtime_error("evaluation: no checkpoint given" +
                             (request.model.empty() ? std::string() : " for model '" + request.model + "'") +
                             ": give a checkpoint (.pth) or a built-in model name (" + names + ")");
  }
  EvaluatedModel model;
  // A built-in model is its file: hashing that file keys its evaluations by the
  // weights, so a rebuilt demo model gets evaluations of its own.
  model.file = builtin ? builtin_model_path(request.model) : request.checkpoint;
  model.label = builtin ? request.model : absolute_path(request.checkpoint);
  ModelSource source;
  source.model = request.model;
  source.checkpoint = request.checkpoint;
  source.vocab = request.vocab;
  source.device = request.device;
  model.captioner = Captioner::load(source);
  std::string note;
  const Precision precision = effective_precision(request.precision, request.device, &note);
  if (!note.empty()) spdlog::warn("evaluation: {}", note);
  model.captioner->set_precision(precision);
  model.precision = precision;
  if (precision != Precision::FP32) model.label += " [" + precision_name(precision) + "]";
  DecodingOptions options = request.options;
  if (request.use_carried_decoding) options = model.captioner->carried_decoding().apply_to(options, request.given);
  options.on_step = nullptr;
  options.return_token_logprobs = false;  // only the caption is kept
  try {
    model.options = model.captioner->complete(options);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(model.file + ": the model cannot decode with these options: " + e.what());
  }
  return model;
}

// The images of a split in file order, and where each image id stands.
struct SplitImages {
  std::string split;  // canonical: train, restval, val, test or all
  std::vector<size_t> images;  // indices into dataset.images
};

SplitImages split_images(const Dataset& dataset, const std::string& split) {
  SplitImages out;
  out.images = images_of_split(dataset, split);
  out.split = split == "all" ? "all" : split_name(parse_split(split));
  std::unordered_map<int64_t, size_t> seen;
  for (const size_t i : out.images)
    // Samples are keyed by image id (as the dataset index keys images).
    if (!seen.emplace(dataset.images[i].cocoid, i).second)
      throw std::runtime_error(dataset.source + ": image id " + std::to_string(dataset.images[i].cocoid) +
                               " stands twice; give every image its own id to evaluate it per image");
  return out;
}

// Every captioned image of the split, in dataset order, scored as `expnet
// score` scores a references file and a candidates file of them: the corpus
// over these images and each image's CIDEr-D and BLEU-4. An image without
// references is listed unscored.
void score_samples(const Dataset& dataset, const SplitImages& split,
                   const std::unordered_map<int64_t, SampleScore>& stored, SampleEvaluation& evaluation) {
  EvalSet set;
  std::vector<size_t> scored;  // per_image index of each EvalSet image
  evaluation.per_image.clear();
  for (const size_t i : split.images) {
    const auto& image = dataset.images[i];
    const auto found = stored.find(image.cocoid);
    if (found == stored.end()) continue;
    SampleScore sample = found->second;
    sample.scored = false;
    sample.cider_d = sample.bleu4 = 0;
    std::vector<std::string> references;
    for (const auto& caption : image.captions) references.push_back(caption.raw);
    if (!references.empty()) {
      set.add_raw(std::to_string(image.cocoid), sample.caption, references);
      scored.push_back(evaluation.per_image.size());
    }
    evaluation.per_image.push_back(std::move(sample));
  }
  evaluation.samples = evaluation.per_image.size();
  evaluation.corpus.clear();
  if (set.size() == 0) return;
  const BleuScores bleu = compute_bleu(set);
  const MetricScores rouge = compute_rouge_l(set);
  const MetricScores cider = compute_cider_d(set);
  for (size_t n = 0; n < 4; ++n) evaluation.corpus["Bleu_" + std::to_string(n + 1)] = bleu.corpus[n];
  evaluation.corpus["ROUGE_L"] = rouge.corpus;
  evaluation.corpus["CIDEr"] = cider.corpus;
  for (size_t k = 0; k < scored.size(); ++k) {
    auto& sample = evaluation.per_image[scored[k]];
    sample.scored = true;
    sample.cider_d = cider.per_image[k];
    sample.bleu4 = bleu.per_image[k][3];
  }
}

}  // namespace

SampleEvaluation evaluate_samples(const SampleEvaluationRequest& request) {
  if (request.dataset.empty()) throw std::runtime_error("evaluation: no dataset given");
  if (request.split.empty())
    throw std::runtime_error("evaluation: no split given for " + request.dataset + " (train, restval, val, test, or all)");
  const EvaluatedModel model = load_model(request);
  const Dataset dataset = load_dataset(request.dataset);
  const SplitImages split = split_images(dataset, request.split);
  const size_t wanted = request.limit > 0 ? std::min(request.limit, split.images.size()) : split.images.size();

  SampleEvaluationStore store(request.db.empty() ? default_evaluation_db(request.dataset) : request.db,
                              SampleEvaluationStore::Access::write);
  SampleEvaluation key;
  key.checkpoint_sha256 = sha256_file(model.file);
  key.options = decoding_options_json(model.options);
  if (model.precision != Precision::FP32) {  // a key of its own; fp32 keys stay as they were
    auto options = nlohmann::ordered_json::parse(key.options);
    options["precision"] = precision_name(model.precision);
    key.options = options.dump();
  }
  key.model = model.label;
  key.dataset = absolute_path(dataset.source);
  key.split = split.split;
  SampleEvaluation evaluation = store.find_or_create(key);

  std::unordered_map<int64_t, SampleScore> stored;
  for (auto& sample : store.samples(evaluation.id)) stored.emplace(sample.cocoid, std::move(sample));
  for (size_t k = 0; k < wanted; ++k) evaluation.resumed += stored.count(dataset.images[split.images[k]].cocoid);
  size_t done = evaluation.resumed;
  if (request.progress) request.progress(done, wanted);
  for (size_t k = 0; k < wanted; ++k) {
    const auto& image = dataset.images[split.images[k]];
    if (stored.count(image.cocoid)) continue;
    if (request.cancelled && request.cancelled()) throw SampleEvaluationCancelled();
    SampleScore sample;
    sample.cocoid = image.cocoid;
    sample.image = absolute_path(dataset.image_path(image));
    const ModeCaption caption = caption_image(*model.captioner, model.options, sample.image, false);
    sample.caption = caption.text;
    sample.error = caption.error;
    store.add_sample(evaluation.id, sample);
    stored.emplace(sample.cocoid, std::move(sample));
    ++evaluation.captioned;
    if (request.progress) request.progress(++done, wanted);
  }
  score_samples(dataset, split, stored, evaluation);
  store.save_scores(evaluation.id, evaluation.per_image, evaluation.corpus);
  return evaluation;
}

std::string default_evaluation_db(const std::string& dataset_path) {
  std::string path = index_cache_path(dataset_path);
  const std::string suffix = ".sqlite";
  if (path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0)
    path.resize(path.size() - suffix.size());
  return path + ".evaluations.sqlite";
}

std::vector<SampleEvaluation> list_sample_evaluations(const std::string& db) {
  if (!fs::exists(db)) return {};
  SampleEvaluationStore store(db, SampleEvaluationStore::Access::read);
  return store.evaluations();
}

SampleEvaluation load_sample_evaluation(const std::string& db, int64_t id) {
  SampleEvaluationStore store(db, SampleEvaluationStore::Access::read);
  SampleEvaluation evaluation = store.evaluation(id);
  evaluation.per_image = store.samples(id);
  return evaluation;
}

std::string sample_evaluation_json(const SampleEvaluation& e) {
  nlohmann::ordered_json per_image = nlohmann::ordered_json::array();
  for (const auto& s : e.per_image) {
    nlohmann::ordered_json entry = {{"image", s.image}, {"cocoid", s.cocoid}, {"caption", s.caption}};
    if (s.scored) entry["scores"] = {{"CIDEr", s.cider_d}, {"Bleu_4", s.bleu4}};
    if (!s.error.empty()) entry["error"] = s.error;
    per_image.push_back(std::move(entry));
  }
  return nlohmann::ordered_json{{"corpus", e.corpus},
                                {"per_image", per_image},
                                {"evaluation",
                                 {{"id", e.id},
                                  {"db", e.db},
                                  {"checkpoint_sha256", e.checkpoint_sha256},
                                  {"resumed", e.resumed},
                                  {"captioned", e.captioned},
                                  {"model", e.model},
                                  {"options", nlohmann::ordered_json::parse(e.options)},
                                  {"dataset", e.dataset},
                                  {"split", e.split},
                                  {"created", e.created}}}}
      .dump();
}

SampleEvaluation sample_evaluation_from_json(const std::string& text, const std::string& what) {
  SampleEvaluation e;
  try {
    const auto j = nlohmann::json::parse(text);
    const auto& about = j.at("evaluation");
    e.id = about.at("id").get<int64_t>();
    e.db = about.value("db", "");
    e.checkpoint_sha256 = about.at("checkpoint_sha256").get<std::string>();
    e.resumed = about.value("resumed", size_t{0});
    e.captioned = about.value("captioned", size_t{0});
    e.model = about.at("model").get<std::string>();
    e.options = about.at("options").dump();
    e.dataset = about.at("dataset").get<std::string>();
    e.split = about.at("split").get<std::string>();
    e.created = about.value("created", "");
    e.corpus = j.at("corpus").get<std::map<std::string, double>>();
    for (const auto& entry : j.at("per_image")) {
      SampleScore s;
      s.image = entry.at("image").get<std::string>();
      s.cocoid = entry.at("cocoid").get<int64_t>();
      s.caption = entry.at("caption").get<std::string>();
      s.error = entry.value("error", "");
      if (entry.contains("scores")) {
        s.scored = true;
        s.cider_d = entry["scores"].at("CIDEr").get<double>();
        s.bleu4 = entry["scores"].at("Bleu_4").get<double>();
      }
      e.per_image.push_back(std::move(s));
    }
  } catch (const nlohmann::json::exception& error) {
    throw std::runtime_error(what + " is not an evaluation of `expnet eval --json` (" + error.what() + ")");
  }
  e.samples = e.per_image.size();
  return e;
}

SampleEvaluation import_sample_evaluation(const SampleEvaluation& there, const std::string& home_dataset,
                                          const std::string& db, const std::string& origin) {
  const Dataset dataset = load_dataset(home_dataset);
  const SplitImages split = split_images(dataset, there.split);
  std::unordered_map<int64_t, size_t> home;  // image id -> index in the home dataset
  for (const size_t i : split.images) home.emplace(dataset.images[i].cocoid, i);
  for (const auto& s : there.per_image)
    if (!home.count(s.cocoid))
      throw std::runtime_error("the evaluation from " + origin + " has image " + std::to_string(s.cocoid) + " (" +
                               s.image + ") that split " + split.split + " of " + dataset.source +
                               " lacks: name this computer's copy of the dataset the host evaluated");
  SampleEvaluationStore store(db.empty() ? default_evaluation_db(home_dataset) : db, SampleEvaluationStore::Access::write);
  SampleEvaluation key;
  key.checkpoint_sha256 = there.checkpoint_sha256;
  auto options = nlohmann::ordered_json::parse(there.options);
  options["host"] = origin;  // a key of its own: another machine may caption some images differently
  key.options = options.dump();
  key.model = there.model + " on " + origin;
  key.dataset = absolute_path(dataset.source);
  key.split = split.split;
  SampleEvaluation evaluation = store.find_or_create(key);
  std::unordered_map<int64_t, SampleScore> stored;
  for (auto& sample : store.samples(evaluation.id)) stored.emplace(sample.cocoid, std::move(sample));
  for (const auto& s : there.per_image) {
    if (stored.count(s.cocoid)) continue;
    SampleScore sample = s;
    sample.image = absolute_path(dataset.image_path(dataset.images[home.at(s.cocoid)]));
    store.add_sample(evaluation.id, sample);
    stored.emplace(sample.cocoid, std::move(sample));
  }
  evaluation.resumed = there.resumed;  // as the host counted them: what it had captioned before
  evaluation.captioned = there.captioned;
  score_samples(dataset, split, stored, evaluation);
  store.save_scores(evaluation.id, evaluation.per_image, evaluation.corpus);
  return evaluation;
}

}  // namespace expnet
