// expnet caption: caption images and folders with a model.
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <iostream>

#include "command.h"
#include "expnet/text/terminal_text.h"
#include "decode_options_cli.h"
#include "expnet/decode/captioner.h"
#include "expnet/image/image_inputs.h"
#include "expnet/metadata/alt_text_model.h"
#include "expnet/system/atomic_file.h"

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
  bool write_alt_text = false;
  AltTextOptions alt;  // --sidecar, --overwrite, --dry-run, --keep-mtime
};

// --write-alt-text's account: what each file got, then written / skipped / failed with their reasons.
struct AltTextTally {
  size_t written = 0, sidecars = 0, skipped = 0, failed = 0;
  void add(const std::string& display, const AltTextOutcome& outcome, bool dry_run) {
    const std::string verb = dry_run ? "would write" : "wrote";
    if (outcome.action == "written") ++written, std::cerr << "alt text: " << verb << " " << terminal_safe(display) << "\n";
    if (outcome.action == "sidecar")
      ++sidecars, std::cerr << "alt text: " << verb << " " << terminal_safe(outcome.target)
                            << (outcome.reason.empty() ? "" : " (" + terminal_safe(outcome.reason) + ")") << "\n";
    if (outcome.action == "skipped") ++skipped, std::cerr << "alt text: skipped " << terminal_safe(display) << ": " << terminal_safe(outcome.reason) << "\n";
    if (outcome.action == "failed") ++failed, std::cerr << "error: alt text of " << terminal_safe(display) << ": " << terminal_safe(outcome.reason) << "\n";
  }
  void summary(bool dry_run) const {
    std::cerr << "alt text" << (dry_run ? " (dry run)" : "") << ": " << written << " written into images, " << sidecars
              << " into sidecars, " << skipped << " skipped, " << failed << " failed\n";
  }
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
  AltTextOptions alt = args.alt;
  if (args.write_alt_text) {
    name_alt_text_model(alt, args.model.model, args.model.checkpoint);
    std::set<std::string> folders;  // what killed runs left there goes first
    for (const auto& input : inputs)
      if (input.error.empty()) folders.insert(std::filesystem::path(input.path).parent_path().string());
    for (const auto& folder : folders) remove_stale_temporaries(folder.empty() ? "." : folder);
  }
  AltTextTally tally;
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
      // Exactly the first caption printed, nothing added.
      if (args.write_alt_text && results[k].error.empty())
        tally.add(displays[k], write_alt_text(paths[k], results[k].texts.front(), alt), alt.dry_run);
    }
    done = std::min(inputs.size(), first + static_cast<size_t>(args.batch));
    if (progress) std::cerr << "\r[" << done << "/" << inputs.size() << "] captioned" << std::flush;
  }
  if (progress) std::cerr << "\n";
  if (args.write_alt_text) tally.summary(alt.dry_run);
  if (failed > 0) {
    std::cerr << failed << " of " << inputs.size() << " images could not be captioned (see the errors above)\n";
    set_exit_code(1);
  }
  if (tally.failed > 0) set_exit_code(1);
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
  auto* alt = command->add_flag("--write-alt-text", args->write_alt_text,
                                "Write the best caption into each image's XMP as alt text (and dc:description where empty) "
                                "(docs/metadata.md)");
  command->add_flag("--sidecar", args->alt.sidecar, "With --write-alt-text: into an XMP sidecar (photo.jpg.xmp); the image is never touched")
      ->needs(alt);
  command->add_flag("--overwrite", args->alt.overwrite, "With --write-alt-text: replace alt text a person wrote")->needs(alt);
  command->add_flag("--dry-run", args->alt.dry_run, "With --write-alt-text: say what would be written, write nothing")->needs(alt);
  command->add_flag("--keep-mtime", args->alt.keep_mtime, "With --write-alt-text: the image keeps its modification time")
      ->needs(alt);
}});

}  // namespace
}  // namespace expnet::cli
