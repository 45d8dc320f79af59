// AIC against PNAIC on the same images (decoding_comparison.h).
#include "expnet/decode/decoding_comparison.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "expnet/data/dataset.h"
#include "expnet/decode/captioner.h"
#include "expnet/decode/group_decoding.h"
#include "expnet/metrics/scorers.h"
#include "expnet/model/demo_model.h"
#include "expnet/system/statistics.h"
#include "expnet/text/terminal_text.h"

namespace expnet {
namespace {

// A mode: the model that decodes it and its options (complete()d).
struct ModeRun {
  Captioner* captioner = nullptr;
  DecodingOptions options;
  std::vector<double> times;  // decode ms per image (images that failed: none)
};

ModeCaption caption_one(ModeRun& run, const std::string& image) {
  ModeCaption caption = caption_image(*run.captioner, run.options, image, true);
  if (caption.error.empty()) run.times.push_back(caption.decode_ms);
  return caption;
}

// Every image with every mode in turn (side by side, so a machine that slows
// down or speeds up during the run affects all modes alike), after one warm-up
// image per mode.
void run_modes(std::vector<ModeRun>& runs, const ComparisonRequest& request, std::vector<ModeSummary>& modes) {
  for (auto& run : runs) caption_one(run, request.images.front());
  for (auto& run : runs) run.times.clear();
  for (size_t i = 0; i < request.images.size(); ++i) {
    if (request.cancelled && request.cancelled()) throw ComparisonCancelled();
    for (size_t m = 0; m < runs.size(); ++m) modes[m].captions.push_back(caption_one(runs[m], request.images[i]));
    if (request.captioned) request.captioned(i, modes);
    if (request.progress) request.progress(runs.size(), i + 1);
  }
  for (size_t m = 0; m < runs.size(); ++m) {
    auto& mode = modes[m];
    mode.decode_ms_per_image = median(runs[m].times);
    double steps = 0, counted = 0;
    for (const auto& c : mode.captions)
      if (c.error.empty()) steps += c.steps, counted += 1;
    mode.steps_mean = counted > 0 ? steps / counted : 0;
  }
  for (auto& mode : modes)
    mode.speedup = mode.decode_ms_per_image > 0 ? modes.front().decode_ms_per_image / mode.decode_ms_per_image : 0;
}

void score(const ComparisonRequest& request, ModeSummary& mode) {
  EvalSet set;
  for (size_t i = 0; i < request.images.size(); ++i)
    set.add_raw(std::to_string(i), mode.captions[i].error.empty() ? mode.captions[i].text : "",
                request.references[i]);
  const auto bleu = compute_bleu(set);
  for (size_t n = 0; n < 4; ++n) mode.scores["Bleu_" + std::to_string(n + 1)] = bleu.corpus[n];
  mode.scores["ROUGE_L"] = compute_rouge_l(set).corpus;
  mode.scores["CIDEr"] = compute_cider_d(set).corpus;
}

}  // namespace

ModeCaption caption_image(Captioner& captioner, const DecodingOptions& options, const std::string& image, bool timed) {
  // Timed: the second decode is kept, the model warm in the caches again after
  // the other modes' decodes of this image.
  if (timed) captioner.caption_file(image, options);
  const CaptionedImage item = captioner.caption_file(image, options);
  ModeCaption caption;
  caption.error = item.error;
  if (!item.error.empty()) return caption;
  caption.text = item.texts.front();
  caption.steps = item.steps;
  caption.groups = item.captions.front().groups;
  for (const auto& g : caption.groups) {
    std::string words;
    for (const auto id : g.tokens) words += (words.empty() ? "" : " ") + captioner.vocabulary().word(id);
    caption.group_texts.push_back(words);
  }
  caption.decode_ms = item.ms.decode;
  return caption;
}

ComparisonModel load_comparison_model(const std::string& spec, const std::string& vocab, ComparisonRole role,
                                      const std::string& device, Precision precision) {
  const bool pnaic = role == ComparisonRole::pnaic;
  const std::string option = pnaic ? "--pnaic " : "--aic ";
  if (spec.empty()) throw std::runtime_error(std::string("compare: no ") + (pnaic ? "PNAIC" : "AIC") + " model given");
  ComparisonModel model;
  model.spec = spec;
  ModelSource source;
  if (is_builtin_model_name(spec)) {
    source.model = spec;
    model.file = builtin_model_path(spec);
  } else {
    source.checkpoint = spec;
    model.file = spec;
  }
  source.vocab = vocab;
  source.device = device;
  model.captioner = Captioner::load(source);
  const auto& config = model.captioner->config();
  if (!pnaic && config.is_pnaic())
    throw std::runtime_error("compare: '" + model.file + "' (" + option + spec + ") is a PNAIC model of " +
                             std::to_string(config.pnaic_groups) + " groups; --aic takes an AIC model");
  if (pnaic && !config.is_pnaic())
    throw std::runtime_error("compare: '" + model.file + "' (" + option + spec +
                             ") is an AIC model; --pnaic takes a PNAIC model (its config has pnaic_groups)");
  model.captioner->set_precision(precision);
  model.precision = precision;
  return model;
}

ComparisonResult compare_decoding(const ComparisonRequest& request) {
  if (request.pnaic.empty()) throw std::runtime_error("compare: give at least one PNAIC model (--pnaic)");
  // Every model is loaded and checked before any decoding, so a wrong file
  // fails at once.
  const auto aic = load_comparison_model(request.aic, "", ComparisonRole::aic, request.device, request.precision);
  std::vector<ComparisonModel> pnaic;
  for (const auto& spec : request.pnaic)
    pnaic.push_back(load_comparison_model(spec, "", ComparisonRole::pnaic, request.device, request.precision));
  return compare_decoding(aic, pnaic, request);
}

ComparisonResult compare_decoding(const ComparisonModel& aic, const std::vector<ComparisonModel>& pnaic,
                                  const ComparisonRequest& request) {
  if (request.images.empty()) throw std::runtime_error("compare: no images to caption");
  if (!request.references.empty() && request.references.size() != request.images.size())
    throw std::runtime_error("compare: references must be given for every image or for none");
  if (pnaic.empty()) throw std::runtime_error("compare: give at least one PNAIC model (--pnaic)");
  ComparisonResult result;
  result.images = request.images;
  result.precision = aic.precision;
  Captioner& aic_model = *aic.captioner;
  // The AIC model's own decoding options (e.g. the demo model's max_word_run)
  // with the search replaced: each mode captions as `expnet caption` would.
  std::vector<ModeRun> runs;
  auto add_aic_mode = [&](const std::string& name, SearchKind search, int beam) {
    ModeSummary mode;
    mode.name = name;
    mode.beam = beam;
    mode.checkpoint = aic.file;
    DecodingOptions options = aic_model.carried_decoding().apply_to({});
    options.search = search;
    options.beam_size = beam;
    runs.push_back({&aic_model, aic_model.complete(options), {}});
    result.modes.push_back(std::move(mode));
  };
  add_aic_mode("aic-greedy", SearchKind::Greedy, 1);
  if (request.beam > 1) add_aic_mode("aic-beam" + std::to_string(request.beam), SearchKind::Beam, request.beam);
  for (const auto& model : pnaic) {
    Captioner& captioner = *model.captioner;
    ModeSummary mode;
    mode.groups = static_cast<int>(captioner.config().pnaic_groups);
    mode.name = "pnaic-k" + std::to_string(mode.groups);
    mode.checkpoint = model.file;
    for (const auto& other : result.modes)
      if (other.name == mode.name) mode.name += "-" + std::to_string(result.modes.size());  // two models of one K
    runs.push_back({&captioner, captioner.complete(captioner.carried_decoding().apply_to({})), {}});
    result.modes.push_back(std::move(mode));
  }
  run_modes(runs, request, result.modes);
  if (!request.references.empty())
    for (auto& mode : result.modes) score(request, mode);
  return result;
}

void add_dataset_images(const std::string& dataset_path, const std::string& split, size_t limit,
                        ComparisonRequest& request) {
  const Dataset dataset = load_dataset(dataset_path);
  auto indices = images_of_split(dataset, split);
  if (limit > 0 && indices.size() > limit) indices.resize(limit);
  for (const size_t i : indices) {
    const auto& image = dataset.images[i];
    request.images.push_back(std::filesystem::absolute(dataset.image_path(image)).lexically_normal().string());
    std::vector<std::string> references;
    for (const auto& caption : image.captions) references.push_back(caption.raw);
    request.references.push_back(std::move(references));
  }
}

namespace {
nlohmann::json caption_entry(const ModeCaption& c) {
  if (!c.error.empty()) return {{"error", json_safe(c.error)}};
  nlohmann::json entry = {{"text", c.text}, {"steps", c.steps}, {"decode_ms", c.decode_ms}};
  if (!c.groups.empty()) {  // PNAIC
    entry["groups"] = nlohmann::json::array();
    for (size_t g = 0; g < c.groups.size(); ++g)
      entry["groups"].push_back(
          {{"text", c.group_texts[g]}, {"tokens", c.groups[g].tokens}, {"end", to_string(c.groups[g].end)}});
  }
  return entry;
}

nlohmann::json image_entry(const std::vector<ModeSummary>& modes, size_t index, const std::string& image) {
  nlohmann::json captions = nlohmann::json::object();
  for (const auto& mode : modes)
    if (index < mode.captions.size()) captions[mode.name] = caption_entry(mode.captions[index]);
  // File names (and errors quoting them) need not be UTF-8, which JSON must be.
  return {{"image", json_safe(image)}, {"captions", std::move(captions)}};
}
}  // namespace

std::string mode_caption_json(const ModeCaption& caption) { return caption_entry(caption).dump(); }

std::string comparison_image_json(const std::vector<ModeSummary>& modes, size_t index, const std::string& image) {
  return image_entry(modes, index, image).dump();
}

std::string comparison_json(const ComparisonResult& result) {
  nlohmann::json modes = nlohmann::json::array();
  for (const auto& mode : result.modes) {
    nlohmann::json m = {{"name", mode.name},       {"checkpoint", json_safe(mode.checkpoint)},
                        {"groups", mode.groups},   {"beam", mode.beam},
                        {"steps_mean", mode.steps_mean}, {"decode_ms_per_image", mode.decode_ms_per_image},
                        {"speedup", mode.speedup}};
    if (!mode.scores.empty()) m["scores"] = mode.scores;
    modes.push_back(std::move(m));
  }
  nlohmann::json per_image = nlohmann::json::array();
  for (size_t i = 0; i < result.images.size(); ++i) per_image.push_back(image_entry(result.modes, i, result.images[i]));
  return nlohmann::json{{"images", result.images.size()},
                        {"precision", precision_name(result.precision)},
                        {"modes", modes},
                        {"per_image", per_image}}
      .dump();
}

}  // namespace expnet
