// expnet score: BLEU-1..4, ROUGE-L and CIDEr-D of candidate captions against
// reference captions, equal to the public COCO caption scorers (pycocoevalcap).
#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "command.h"
#include "expnet/metrics/scorers.h"
#include "expnet/system/input_file.h"

namespace expnet::cli {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

nlohmann::json read_json_file(const std::string& path, const std::string& what) {
  const std::string text = read_input_file(path, what + " file");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error(path + ": the " + what + " file is not valid JSON (" + e.what() + ")");
  }
}

std::string example_ids(const std::vector<std::string>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size() && i < 3; ++i) out += (i ? ", '" : "'") + ids[i] + "'";
  return ids.size() > 3 ? out + ", ..." : out;
}

// R.json: {"image id": ["reference", ...], ...}
std::map<std::string, std::vector<std::string>> read_references(const std::string& path) {
  const auto json = read_json_file(path, "references");
  const std::string expected = "expected a JSON object mapping each image id to a list of reference captions";
  if (!json.is_object()) throw std::runtime_error(path + ": " + expected);
  if (json.empty()) throw std::runtime_error(path + ": no images; " + expected);
  std::map<std::string, std::vector<std::string>> references;
  for (const auto& [id, list] : json.items()) {
    if (!list.is_array()) throw std::runtime_error(path + ": image '" + id + "': " + expected);
    if (list.empty())
      throw std::runtime_error(path + ": image '" + id + "' has an empty reference list; give at least one caption");
    auto& captions = references[id];
    for (const auto& caption : list) {
      if (!caption.is_string())
        throw std::runtime_error(path + ": image '" + id + "': every reference must be a string, found " +
                                 std::string(caption.type_name()));
      captions.push_back(caption.get<std::string>());
    }
  }
  return references;
}

// C.json: {"image id": "candidate", ...} (a list holding one string is accepted too)
std::map<std::string, std::string> read_candidates(const std::string& path) {
  const auto json = read_json_file(path, "candidates");
  const std::string expected = "expected a JSON object mapping each image id to one candidate caption string";
  if (!json.is_object()) throw std::runtime_error(path + ": " + expected);
  std::map<std::string, std::string> candidates;
  for (const auto& [id, value] : json.items()) {
    if (value.is_string()) {
      candidates[id] = value.get<std::string>();
    } else if (value.is_array() && value.size() == 1 && value[0].is_string()) {
      candidates[id] = value[0].get<std::string>();
    } else {
      throw std::runtime_error(path + ": image '" + id + "': " + expected);
    }
  }
  return candidates;
}

void check_same_ids(const std::map<std::string, std::vector<std::string>>& references,
                    const std::map<std::string, std::string>& candidates, const std::string& references_path,
                    const std::string& candidates_path) {
  std::vector<std::string> without_candidate, without_references;
  for (const auto& entry : references)
    if (!candidates.count(entry.first)) without_candidate.push_back(entry.first);
  for (const auto& entry : candidates)
    if (!references.count(entry.first)) without_references.push_back(entry.first);
  if (without_candidate.empty() && without_references.empty()) return;
  std::string message = "the image ids of " + references_path + " and " + candidates_path + " differ:";
  if (!without_candidate.empty())
    message += " " + std::to_string(without_candidate.size()) + " image(s) have references but no candidate (" +
               example_ids(without_candidate) + ");";
  if (!without_references.empty())
    message += " " + std::to_string(without_references.size()) + " candidate(s) have no references (" +
               example_ids(without_references) + ");";
  throw std::runtime_error(message + " score the same images in both files");
}

nlohmann::json six_scores(const std::array<double, 4>& bleu, double rouge, double cider) {
  return {{"Bleu_1", bleu[0]}, {"Bleu_2", bleu[1]}, {"Bleu_3", bleu[2]},
          {"Bleu_4", bleu[3]}, {"ROUGE_L", rouge},  {"CIDEr", cider}};
}

struct Options {
  std::string references, candidates;
  bool json = false;
};

void run(const Options& options) {
  const auto references = read_references(options.references);
  const auto candidates = read_candidates(options.candidates);
  check_same_ids(references, candidates, options.references, options.candidates);

  auto start = Clock::now();
  EvalSet set;
  try {
    std::vector<EvalSet::RawImage> images;
    images.reserve(references.size());
    for (const auto& [id, captions] : references) images.push_back({id, candidates.at(id), &captions});
    set.add_raw_all(images);
  } catch (const CaptionTooLong& e) {
    throw std::runtime_error((e.reference() < 0 ? options.candidates : options.references) + ": " + e.what());
  }
  const double tokenize_ms = ms_since(start);
  start = Clock::now();
  const BleuScores bleu = compute_bleu(set);
  const double bleu_ms = ms_since(start);
  start = Clock::now();
  const MetricScores rouge = compute_rouge_l(set);
  const double rouge_ms = ms_since(start);
  start = Clock::now();
  const MetricScores cider = compute_cider_d(set);
  const double cider_ms = ms_since(start);

  std::cerr << "note: METEOR and SPICE are not computed (they need coco-caption's Java tools)\n";
  if (options.json) {
    nlohmann::json per_image = nlohmann::json::object();
    for (size_t i = 0; i < set.size(); ++i)
      per_image[set.image_id(i)] = six_scores(bleu.per_image[i], rouge.per_image[i], cider.per_image[i]);
    const nlohmann::json out = {
        {"corpus", six_scores(bleu.corpus, rouge.corpus, cider.corpus)},
        {"per_image", per_image},
        {"ms", {{"tokenize", tokenize_ms}, {"Bleu", bleu_ms}, {"ROUGE_L", rouge_ms}, {"CIDEr", cider_ms}}}};
    std::cout << out.dump() << std::endl;
    return;
  }
  std::printf("images: %zu\n", set.size());
  for (int k = 0; k < 4; ++k) std::printf("Bleu_%d: %.6f\n", k + 1, bleu.corpus[k]);
  std::printf("ROUGE_L: %.6f\nCIDEr: %.6f\n", rouge.corpus, cider.corpus);
  std::printf("METEOR: not computed\nSPICE: not computed\n");
  std::printf("ms: tokenize %.2f, Bleu %.2f, ROUGE_L %.2f, CIDEr %.2f\n", tokenize_ms, bleu_ms, rouge_ms, cider_ms);
}

const bool registered = register_command({"score", 40, [](CLI::App& root) {
  auto [command, options] = add_command<Options>(
      &root, "score", "BLEU-1..4, ROUGE-L and CIDEr-D of candidate captions, as the COCO caption scorers compute them", run);
  command->add_option("--references", options->references, "JSON object: image id -> list of reference captions")
      ->required();
  command->add_option("--candidates", options->candidates, "JSON object: image id -> candidate caption")->required();
  command->add_flag("--json", options->json, "Print one compact JSON object with corpus, per-image scores and timings");
}});

}  // namespace
}  // namespace expnet::cli
