// AIC against PNAIC on the same images (decoding_comparison.h).
#include "expnet/decode/decoding_comparison.h"

#include <algorithm>
#include <stdexcept>

#include "expnet/decode/captioner.h"
#include "expnet/metrics/scorers.h"
#include "expnet/model/demo_model.h"
#include "expnet/system/statistics.h"

namespace expnet {
namespace {

std::unique_ptr<Captioner> load_model(const std::string& spec, const std::string& device, std::string& file) {
  ModelSource source;
  if (is_builtin_model_name(spec)) {
    source.model = spec;
    file = builtin_model_path(spec);
  } else {
    source.checkpoint = spec;
    file = spec;
  }
  source.device = device;
  return Captioner::load(source);
}

// A mode: the model that decodes it and its options (complete()d).
struct ModeRun {
  Captioner* captioner = nullptr;
  DecodingOptions options;
  std::vector<double> times;  // decode ms per image (images that failed: none)
};

// One image with one mode, batch 1, decoded twice: the second time is the one
// kept (run.times), with the mode's model warm in the caches again after the
// other modes' decodes of this image.
ModeCaption caption_one(ModeRun& run, const std::string& image) {
  run.captioner->caption_files({image}, run.options);
  auto item = std::move(run.captioner->caption_files({image}, run.options).front());
  ModeCaption caption;
  caption.error = item.error;
  if (!item.error.empty()) return caption;
  caption.text = item.texts.front();
  caption.steps = item.steps;
  caption.groups = item.captions.front().groups;
  for (const auto& g : caption.groups) {
    std::string words;
    for (const auto id : g.tokens) words += (words.empty() ? "" : " ") + run.captioner->vocabulary().word(id);
    caption.group_texts.push_back(words);
  }
  run.times.push_back(item.ms.decode);
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

ComparisonResult compare_decoding(const ComparisonRequest& request) {
  if (request.images.empty()) throw std::runtime_error("compare: no images to caption");
  if (!request.references.empty() && request.references.size() != request.images.size())
    throw std::runtime_error("compare: references must be given for every image or for none");
  if (request.pnaic.empty()) throw std::runtime_error("compare: give at least one PNAIC model (--pnaic)");
  ComparisonResult result;
  result.images = request.images;

  std::string aic_file;
  auto aic = load_model(request.aic, request.device, aic_file);
  if (aic->config().is_pnaic())
    throw std::runtime_error("compare: '" + aic_file + "' (--aic " + request.aic + ") is a PNAIC model of " +
                             std::to_string(aic->config().pnaic_groups) + " groups; --aic takes an AIC model");
  // The AIC model's own decoding options (e.g. the demo model's max_word_run)
  // with the search replaced: each mode captions as `expnet caption` would.
  std::vector<std::pair<ModeSummary, DecodingOptions>> aic_modes;
  {
    ModeSummary greedy;
    greedy.name = "aic-greedy";
    DecodingOptions options = aic->carried_decoding().apply_to({});
    options.search = SearchKind::Greedy;
    options.beam_size = 1;
    aic_modes.emplace_back(greedy, options);
    if (request.beam > 1) {
      ModeSummary beam;
      beam.name = "aic-beam" + std::to_string(request.beam);
      beam.beam = request.beam;
      options = aic->carried_decoding().apply_to({});
      options.search = SearchKind::Beam;
      options.beam_size = request.beam;
      aic_modes.emplace_back(beam, options);
    }
  }
  // Every model is loaded and checked before any decoding, so a wrong file
  // fails at once.
  std::vector<std::pair<std::unique_ptr<Captioner>, std::string>> pnaic_models;
  for (const auto& spec : request.pnaic) {
    std::string file;
    auto pnaic = load_model(spec, request.device, file);
    if (!pnaic->config().is_pnaic())
      throw std::runtime_error("compare: '" + file + "' (--pnaic " + spec +
                               ") is an AIC model; --pnaic takes a PNAIC model (its config has pnaic_groups)");
    pnaic_models.emplace_back(std::move(pnaic), file);
  }
  std::vector<ModeRun> runs;
  for (auto& [mode, options] : aic_modes) {
    mode.checkpoint = aic_file;
    runs.push_back({aic.get(), aic->complete(options), {}});
    result.modes.push_back(std::move(mode));
  }
  for (auto& [pnaic, file] : pnaic_models) {
    ModeSummary mode;
    mode.groups = static_cast<int>(pnaic->config().pnaic_groups);
    mode.name = "pnaic-k" + std::to_string(mode.groups);
    mode.checkpoint = file;
    for (const auto& other : result.modes)
      if (other.name == mode.name) mode.name += "-" + std::to_string(result.modes.size());  // two models of one K
    runs.push_back({pnaic.get(), pnaic->complete(pnaic->carried_decoding().apply_to({})), {}});
    result.modes.push_back(std::move(mode));
  }
  run_modes(runs, request, result.modes);
  if (!request.references.empty())
    for (auto& mode : result.modes) score(request, mode);
  return result;
}

}  // namespace expnet
