// expnet caption: caption images and folders with a model.
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "command.h"
#include "expnet/text/terminal_text.h"
#include "decode_options_cli.h"
#include "expnet/decode/captioner.h"
#include "expnet/image/image_inputs.h"

namespace expnet::cli {
namespace {

struct CaptionArgs {
  ModelArgs model;
  DecodeArgs decode;
  std::vector<std::string> inputs;
  int batch = 1;
  bool no_exif = false;
  bool json = false;
  std::string decoder = "incremental";
};

// A PNAIC caption's groups: their words, ids and how each ended.
nlohmann::json groups_json(const Hypothesis& h, const Vocabulary& vocab) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : h.groups) {
    std::string text;
    for (const auto id : g.tokens) text += (text.empty() ? "" : " ") + vocab.word(id);
    groups.push_back({{"text", text}, {"tokens", g.tokens}, {"end", to_string(g.end)}});
  }
  return groups;
}

nlohmann::json to_json(const CaptionedImage& item, bool with_logprobs, const nlohmann::json& decoding,
                       const Vocabulary& vocab) {
  if (!item.error.empty()) return {{"image", json_safe(item.image)}, {"error", json_safe(item.error)}};
  nlohmann::json captions = nlohmann::json::array();
  for (size_t i = 0; i < item.captions.size(); ++i) {
    const auto& h = item.captions[i];
    nlohmann::json c = {{"text", item.texts[i]}, {"tokens", h.tokens}, {"sum_logprob", h.sum_logprob}, {"score", h.score}};
    if (with_logprobs) c["token_logprobs"] = h.token_logprobs;
    if (!h.groups.empty()) c["groups"] = groups_json(h, vocab);
    c["steps"] = item.steps;
    captions.push_back(std::move(c));
  }
  return {{"image", json_safe(item.image)},
          {"captions", captions},
          {"decoding", decoding},
          {"ms", {{"load", item.ms.load}, {"preprocess", item.ms.preprocess}, {"encode", item.ms.encode}, {"decode", item.ms.decode}}}};
}

// A failure of the batch as a whole (out of memory in the encoder, ...) is
// retried file by file, so that it becomes the error of the file that causes it.
std::vector<CaptionedImage> caption_batch(Captioner& captioner, const std::vector<std::string>& paths,
                                          const DecodingOptions& options, const ImageLoadOptions& image_options, int batch,
                                          DecoderKind kind) {
  try {
    return captioner.caption_files(paths, options, image_options, batch, kind);
  } catch (const std::exception& batch_error) {
    std::vector<CaptionedImage> results(paths.size());
    for (size_t i = 0; i < paths.size(); ++i) {
      results[i].image = paths[i];
      results[i].error = batch_error.what();
      if (paths.size() == 1) continue;
      try {
        results[i] = std::move(captioner.caption_files({paths[i]}, options, image_options, 1, kind).front());
      } catch (const std::exception& e) {
        results[i].error = e.what();
      }
    }
    return results;
  }
}

void run(const RuntimeOptions& runtime, const CaptionArgs& args) {
  const auto inputs = expand_image_inputs(args.inputs);
  auto captioner = load_captioner(args.model, runtime);
  const CarriedDecoding& carried = captioner->carried_decoding();
  const DecodingOptions options = args.decode.options(carried);
  const auto given = args.decode.given();
  if (captioner->config().is_pnaic() && options.beam_size > 1 &&
      std::find(given.begin(), given.end(), "beam_size") != given.end())
    throw std::runtime_error("PNAIC models decode greedily per group: --beam " + std::to_string(options.beam_size) +
                             " (beam search) is not available for them (docs/pnaic.md)");
  args.decode.report(carried);
  const nlohmann::json decoding = args.decode.used_json(captioner->complete(options), carried);
  ImageLoadOptions image_options;
  image_options.apply_exif = !args.no_exif;
  const DecoderKind kind = args.decoder == "full" ? DecoderKind::Full : DecoderKind::Incremental;
  const bool progress = isatty(STDERR_FILENO) != 0;
  size_t done = 0, failed = 0;
  auto emit = [&](const CaptionedImage& item) {
    if (!item.error.empty()) {
      ++failed;
      std::cerr << "error: " << terminal_safe(item.image) << ": " << terminal_safe(item.error) << "\n";
    }
    if (args.json) {
      std::cout << to_json(item, args.decode.token_logprobs, decoding, captioner->vocabulary()).dump() << std::endl;
    } else if (item.error.empty()) {
      std::cout << terminal_safe(item.image) << "\t" << item.texts.front() << std::endl;
      for (size_t i = 1; i < item.texts.size(); ++i) std::cout << "\t" << item.texts[i] << std::endl;
    }
  };
  for (size_t first = 0; first < inputs.size(); first += static_cast<size_t>(args.batch)) {
    std::vector<std::string> paths, displays;
    for (size_t i = first; i < std::min(inputs.size(), first + static_cast<size_t>(args.batch)); ++i) {
      if (!inputs[i].error.empty()) {
        emit({inputs[i].display, inputs[i].error, {}, {}, {}});
        continue;
      }
      paths.push_back(inputs[i].path);
      displays.push_back(inputs[i].display);
    }
    auto results = caption_batch(*captioner, paths, options, image_options, args.batch, kind);
    for (size_t k = 0; k < results.size(); ++k) {
      results[k].image = displays[k];
      emit(results[k]);
    }
    done = std::min(inputs.size(), first + static_cast<size_t>(args.batch));
    if (progress) std::cerr << "\r[" << done << "/" << inputs.size() << "] captioned" << std::flush;
  }
  if (progress) std::cerr << "\n";
  if (failed > 0) {
    std::cerr << failed << " of " << inputs.size() << " images could not be captioned (see the errors above)\n";
    set_exit_code(1);
  }
}

const bool registered = register_command({"caption", 20, [](CLI::App& root) {
  auto [command, args] = add_command<CaptionArgs>(&root, "caption", "Caption images and folders of images", run);
  add_model_options(command, args->model);
  add_decode_options(command, args->decode);
  command->add_option("images", args->inputs, "Image files or folders (walked recursively)")->required();
  command->add_option("--batch", args->batch, "Images decoded together")->check(CLI::PositiveNumber);
  command->add_option("--decoder", args->decoder, "incremental (cached, fast) or full (recompute, as the reference)")
      ->check(CLI::IsMember({"incremental", "full"}));
  command->add_flag("--no-exif", args->no_exif, "Ignore EXIF orientation (as the reference does)");
  command->add_flag("--json", args->json, "One compact JSON object per image on stdout");
}});

}  // namespace
}  // namespace expnet::cli
