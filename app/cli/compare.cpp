// expnet compare: AIC against PNAIC on the same images (decoding_comparison.h):
// captions, steps, decode latency, speed-up over AIC greedy and, on a dataset
// split, the scores of `expnet score`.
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "command.h"
#include "expnet/data/dataset.h"
#include "expnet/decode/decoding_comparison.h"
#include "expnet/decode/group_decoding.h"
#include "expnet/image/image_inputs.h"

namespace expnet::cli {
namespace {

struct CompareArgs {
  std::string aic = "demo";
  std::vector<std::string> pnaic;
  int beam = 3;
  std::string dataset, split;
  size_t limit = 0;
  std::vector<std::string> inputs;
  bool json = false;
};

// The dataset's images of `split` ("all": every image) with their references.
void add_dataset_images(const CompareArgs& args, ComparisonRequest& request) {
  const Dataset dataset = load_dataset(args.dataset);
  const bool all = args.split == "all";
  const Split split = all ? Split::Test : parse_split(args.split);
  for (const auto& image : dataset.images) {
    if (!all && image.split != split) continue;
    if (args.limit > 0 && request.images.size() >= args.limit) break;
    request.images.push_back(std::filesystem::absolute(dataset.image_path(image)).lexically_normal().string());
    std::vector<std::string> references;
    for (const auto& caption : image.captions) references.push_back(caption.raw);
    request.references.push_back(std::move(references));
  }
  if (request.images.empty())
    throw std::runtime_error(args.dataset + ": no images in split '" + args.split +
                             "' (splits: train, restval, val, test, or all)");
}

nlohmann::json result_json(const ComparisonResult& result) {
  nlohmann::json modes = nlohmann::json::array();
  for (const auto& mode : result.modes) {
    nlohmann::json m = {{"name", mode.name},       {"checkpoint", mode.checkpoint},
                        {"groups", mode.groups},   {"beam", mode.beam},
                        {"steps_mean", mode.steps_mean}, {"decode_ms_per_image", mode.decode_ms_per_image},
                        {"speedup", mode.speedup}};
    if (!mode.scores.empty()) m["scores"] = mode.scores;
    modes.push_back(std::move(m));
  }
  nlohmann::json per_image = nlohmann::json::array();
  for (size_t i = 0; i < result.images.size(); ++i) {
    nlohmann::json captions = nlohmann::json::object();
    for (const auto& mode : result.modes) {
      const auto& c = mode.captions[i];
      if (!c.error.empty()) {
        captions[mode.name] = {{"error", c.error}};
        continue;
      }
      nlohmann::json entry = {{"text", c.text}, {"steps", c.steps}};
      if (mode.groups > 0) {
        entry["groups"] = nlohmann::json::array();
        for (size_t g = 0; g < c.groups.size(); ++g)
          entry["groups"].push_back(
              {{"text", c.group_texts[g]}, {"tokens", c.groups[g].tokens}, {"end", to_string(c.groups[g].end)}});
      }
      captions[mode.name] = std::move(entry);
    }
    per_image.push_back({{"image", result.images[i]}, {"captions", std::move(captions)}});
  }
  return {{"images", result.images.size()}, {"modes", modes}, {"per_image", per_image}};
}

void print_table(const ComparisonResult& result) {
  const bool scored = !result.modes.front().scores.empty();
  std::cout << result.images.size() << " images, each decoded alone (batch 1) by every mode in turn after a warm-up;"
            << " ms/image: median; speedup: aic-greedy's ms/image / the mode's\n";
  std::cout << std::left << std::setw(16) << "mode" << std::right << std::setw(8) << "groups" << std::setw(7) << "beam"
            << std::setw(8) << "steps" << std::setw(12) << "ms/image" << std::setw(9) << "speedup";
  if (scored) std::cout << std::setw(9) << "BLEU-4" << std::setw(9) << "CIDEr-D";
  std::cout << "\n" << std::fixed;
  for (const auto& m : result.modes) {
    std::cout << std::left << std::setw(16) << m.name << std::right << std::setw(8) << m.groups << std::setw(7)
              << m.beam << std::setw(8) << std::setprecision(2) << m.steps_mean << std::setw(12)
              << std::setprecision(2) << m.decode_ms_per_image << std::setw(8) << std::setprecision(2) << m.speedup
              << "x";
    if (scored)
      std::cout << std::setw(9) << std::setprecision(3) << m.scores.at("Bleu_4") << std::setw(9)
                << std::setprecision(3) << m.scores.at("CIDEr");
    std::cout << "\n";
  }
}

void run(const RuntimeOptions& runtime, const CompareArgs& args) {
  ComparisonRequest request;
  request.aic = args.aic;
  request.pnaic = args.pnaic;
  request.beam = args.beam;
  request.device = runtime.device;
  if (args.dataset.empty() && args.inputs.empty())
    throw std::runtime_error("compare: no images: give --dataset FILE --split SPLIT, or image files or folders");
  if (!args.dataset.empty() && !args.inputs.empty())
    throw std::runtime_error("compare: give either --dataset FILE --split SPLIT or image files/folders, not both");
  if (!args.dataset.empty()) {
    if (args.split.empty()) throw std::runtime_error("compare: --dataset needs --split (train, val, test, ... or all)");
    add_dataset_images(args, request);
  } else {
    for (const auto& input : expand_image_inputs(args.inputs)) {
      if (!input.error.empty()) throw std::runtime_error(input.display + ": " + input.error);
      request.images.push_back(input.path);
    }
    if (args.limit > 0 && request.images.size() > args.limit) request.images.resize(args.limit);
  }
  const bool progress = isatty(STDERR_FILENO) != 0;
  request.progress = [&](size_t, size_t done) {
    if (progress) std::cerr << "\r" << done << "/" << request.images.size() << " images" << std::flush;
  };
  const auto result = compare_decoding(request);
  if (progress) std::cerr << "\n";
  if (args.json) {
    std::cout << result_json(result).dump() << std::endl;
  } else {
    print_table(result);
  }
}

const bool registered = register_command({"compare", 22, [](CLI::App& root) {
  auto [command, args] = add_command<CompareArgs>(
      &root, "compare", "Compare AIC (greedy, beam) with PNAIC models on the same images", run);
  command->add_option("--aic", args->aic, "AIC model: a checkpoint of ours or 'demo'")->capture_default_str();
  command->add_option("--pnaic", args->pnaic, "PNAIC model (repeatable): a checkpoint or pnaic-demo-k2, pnaic-demo-k5")
      ->required()
      ->allow_extra_args(false);  // one file per --pnaic, so image paths may follow
  command->add_option("--beam", args->beam, "Beam of the aic-beam<B> mode (1 = no beam mode)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  command->add_option("--dataset", args->dataset, "Dataset file or folder (scores against its references)");
  command->add_option("--split", args->split, "Split of --dataset: train, restval, val, test, or all");
  command->add_option("--limit", args->limit, "At most N images (0 = all)");
  command->add_option("images", args->inputs, "Image files or folders (no scores: they have no references)");
  command->add_flag("--json", args->json, "One JSON object on stdout");
}});

}  // namespace
}  // namespace expnet::cli
