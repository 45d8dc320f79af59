// expnet compare: AIC against PNAIC on the same images (decoding_comparison.h):
// captions, steps, decode latency, speed-up over AIC greedy and, on a dataset
// split, the scores of `expnet score`.
#include <unistd.h>

#include <iomanip>
#include <iostream>

#include "command.h"
#include "decode_options_cli.h"
#include "expnet/decode/decoding_comparison.h"
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
  std::string precision = "fp32";
  bool json = false;
};

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
  request.precision = precision_to_run(args.precision, runtime.device);
  if (args.dataset.empty() && args.inputs.empty())
    throw std::runtime_error("compare: no images: give --dataset FILE --split SPLIT, or image files or folders");
  if (!args.dataset.empty() && !args.inputs.empty())
    throw std::runtime_error("compare: give either --dataset FILE --split SPLIT or image files/folders, not both");
  if (!args.dataset.empty()) {
    if (args.split.empty()) throw std::runtime_error("compare: --dataset needs --split (train, val, test, ... or all)");
    add_dataset_images(args.dataset, args.split, args.limit, request);
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
    std::cout << comparison_json(result) << std::endl;
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
  command->add_option("--precision", args->precision,
                      "Every model's matrix products: fp32, bf16, int8 or auto (as for caption)")
      ->check(CLI::IsMember(precision_names()))
      ->capture_default_str();
  command->add_flag("--json", args->json, "One JSON object on stdout");
}});

}  // namespace
}  // namespace expnet::cli
