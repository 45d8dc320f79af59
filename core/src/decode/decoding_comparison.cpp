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

// One mode over every image, batch 1, after a warm-up decode of the first image.
void run_mode(Captioner& captioner, const DecodingOptions& options, const ComparisonRequest& request, size_t index,
              ModeSummary& mode) {
  const auto complete = captioner.complete(options);
  if (!request.images.empty()) captioner.caption_files({request.images.front()}, complete);  // warm-up
  std::vector<double> times, steps;
  for (size_t i = 0; i < request.images.size(); ++i) {
    auto item = std::move(captioner.caption_files({request.images[i]}, complete).front());
    ModeCaption caption;
    caption.error = item.error;
    if (item.error.empty()) {
      caption.text = item.texts.front();
      caption.steps = item.steps;
      caption.groups = item.captions.front().groups;
      for (const auto& g : caption.groups) {
        std::string words;
        for (const auto id : g.tokens) words += (words.empty() ? "" : " ") + captioner.vocabulary().word(id);
        caption.group_texts.push_back(words);
      }
      times.push_back(item.ms.decode);
      steps.push_back(item.steps);
    }
    mode.captions.push_back(std::move(caption));
    if (request.progress) request.progress(index, i + 1);
  }
  mode.decode_ms_per_image = median(times);
  double total = 0;
  for (const double s : steps) total += s;
  mode.steps_mean = steps.empty() ? 0 : total / static_cast<double>(steps.size());
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
  size_t index = 0;
  for (auto& [mode, options] : aic_modes) {
    mode.checkpoint = aic_file;
    run_mode(*aic, options, request, index++, mode);
    result.modes.push_back(std::move(mode));
  }
  aic.reset();
  for (auto& [pnaic, file] : pnaic_models) {
    ModeSummary mode;
    mode.groups = static_cast<int>(pnaic->config().pnaic_groups);
    mode.name = "pnaic-k" + std::to_string(mode.groups);
    mode.checkpoint = file;
    for (const auto& other : result.modes)
      if (other.name == mode.name) mode.name += "-" + std::to_string(index);  // two models of one K
    run_mode(*pnaic, pnaic->carried_decoding().apply_to({}), request, index++, mode);
    result.modes.push_back(std::move(mode));
    pnaic.reset();
  }
  const double base = result.modes.front().decode_ms_per_image;
  for (auto& mode : result.modes) {
    mode.speedup = mode.decode_ms_per_image > 0 ? base / mode.decode_ms_per_image : 0;
    if (!request.references.empty()) score(request, mode);
  }
  return result;
}

}  // namespace expnet
