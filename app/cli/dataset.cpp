// expnet dataset stats | vocab | make-shapes: what a captioning dataset holds, its
// vocabulary, and the built-in demo set.
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <iomanip>
#include <iostream>
#include <mutex>

#include "command.h"
#include "dataset_options_cli.h"
#include "expnet/text/terminal_text.h"
#include "expnet/data/dataset.h"
#include "expnet/data/shapes_dataset.h"

namespace expnet::cli {
namespace {

void print_stats(const Dataset& dataset, const DatasetStats& stats, int min_count, bool as_json) {
  if (as_json) {
    nlohmann::json histogram = nlohmann::json::object();
    for (const auto& [length, count] : stats.caption_length_histogram) histogram[std::to_string(length)] = count;
    nlohmann::json top = nlohmann::json::array();
    // Words and paths come from the dataset file: any bytes (json_safe, or dump() throws).
    for (const auto& [word, count] : stats.top_words) top.push_back({json_safe(word), count});
    nlohmann::json out = {{"source", json_safe(dataset.source)},
                          {"format", format_name(dataset.format)},
                          {"image_root", json_safe(dataset.image_root)},
                          {"images", stats.images},
                          {"captions", stats.captions},
                          {"images_per_split", stats.images_per_split},
                          {"captions_per_split", stats.captions_per_split},
                          {"images_without_captions", stats.images_without_captions},
                          {"caption_length_histogram", histogram},
                          {"mean_caption_length", stats.mean_caption_length},
                          {"max_caption_length", stats.max_caption_length},
                          {"min_count", min_count},
                          {"distinct_training_words", stats.distinct_training_words},
                          {"vocabulary_size", stats.vocabulary_size},
                          {"training_coverage", stats.training_coverage},
                          {"eval_coverage", stats.eval_coverage},
                          {"top_words", top}};
    std::cout << out.dump() << std::endl;
    return;
  }
  std::cout << "dataset: " << terminal_safe(dataset.source) << " (" << format_name(dataset.format) << ")\n"
            << "image root: " << terminal_safe(dataset.image_root) << "\n"
            << "images: " << stats.images << ", captions: " << stats.captions << "\n";
  for (const auto& [split, count] : stats.images_per_split)
    std::cout << "  " << std::left << std::setw(8) << split << std::right << std::setw(9) << count << " images "
              << std::setw(9) << stats.captions_per_split.at(split) << " captions\n";
  if (stats.images_without_captions) std::cout << "images without captions: " << stats.images_without_captions << "\n";
  std::cout << std::fixed << std::setprecision(2) << "caption length (tokens): mean " << stats.mean_caption_length
            << ", max " << stats.max_caption_length << "\n";
  size_t peak = 1;
  for (const auto& [length, count] : stats.caption_length_histogram) peak = std::max(peak, count);
  for (const auto& [length, count] : stats.caption_length_histogram)
    std::cout << std::setw(5) << length << " " << std::setw(9) << count << " " << std::string(count * 40 / peak, '#') << "\n";
  std::cout << "training words (train + restval): " << stats.distinct_training_words << " distinct; vocabulary at min count "
            << min_count << ": " << stats.vocabulary_size << " (with PAD SOS EOS UNK)\n"
            << std::setprecision(4) << "coverage: " << 100.0 * stats.training_coverage << "% of training tokens, "
            << 100.0 * stats.eval_coverage << "% of val + test tokens\n"
            << "most frequent words:";
  for (const auto& [word, count] : stats.top_words) std::cout << " " << terminal_safe(word) << "(" << count << ")";
  std::cout << "\n";
}

// What stats and vocab share: the dataset, and how often a training word must
// be seen to enter the vocabulary.
struct VocabularyArgs {
  DatasetArgs dataset;
  int min_count = 5;
  bool json = false;
};

template <typename Args>
std::pair<CLI::App*, Args*> add_vocabulary_command(CLI::App* group, const std::string& name, const std::string& description,
                                                   void (*run)(const Args&), const std::string& min_count_help) {
  auto [command, args] = add_command<Args>(group, name, description, run);
  add_dataset_options(command, args->dataset);
  command->add_option("--min-count", args->min_count, min_count_help)->capture_default_str()->check(CLI::PositiveNumber);
  return {command, args};
}

struct StatsArgs : VocabularyArgs {
  size_t top = 20;
};

void run_stats(const StatsArgs& args) {
  const Dataset dataset = read_dataset(args.dataset);
  print_stats(dataset, compute_stats(dataset, args.min_count, args.top), args.min_count, args.json);
}

struct VocabArgs : VocabularyArgs {
  std::string out;
};

void run_vocab(const VocabArgs& args) {
  const Dataset dataset = read_dataset(args.dataset);
  const VocabularyBuild build = build_vocabulary(dataset, args.min_count);
  if (build.total_tokens == 0)
    throw std::runtime_error(dataset.source + " has no train or restval captions, so there is nothing to build a vocabulary from");
  build.vocabulary.save_json(args.out);
  const double coverage = 1.0 - static_cast<double>(build.unk_tokens) / static_cast<double>(build.total_tokens);
  if (args.json) {
    std::cout << nlohmann::json({{"out", args.out}, {"size", build.vocabulary.size()}, {"kept_words", build.kept_words},
                                 {"unk_words", build.dropped_words}, {"training_tokens", build.total_tokens},
                                 {"unk_tokens", build.unk_tokens}, {"coverage", coverage}, {"min_count", args.min_count}})
                     .dump()
              << std::endl;
  } else {
    std::cout << "wrote " << args.out << ": " << build.vocabulary.size() << " entries (" << build.kept_words
              << " words seen >= " << args.min_count << " times + PAD SOS EOS UNK); " << build.dropped_words
              << " rarer words become UNK (" << build.unk_tokens << " of " << build.total_tokens
              << " training tokens, coverage " << std::fixed << std::setprecision(2) << 100.0 * coverage << "%)\n";
  }
}

struct MakeShapesArgs {
  ShapesOptions shapes;
  std::string style = "varied";
  bool json = false;
};

void run_make_shapes(const RuntimeOptions& runtime, const MakeShapesArgs& args) {
  ShapesOptions options = args.shapes;
  options.style = parse_shapes_style(args.style);
  options.threads = runtime.threads;
  int64_t last_logged = 0;
  std::mutex log_mutex;
  const ShapesReport report = make_shapes_dataset(options, [&](int64_t done, int64_t total) {
    std::lock_guard<std::mutex> lock(log_mutex);
    if (done == total || done - last_logged >= std::max<int64_t>(total / 10, 1)) {
      last_logged = done;
      spdlog::info("rendered {}/{} images", done, total);
    }
  });
  if (args.json) {
    std::cout << nlohmann::json({{"dataset", report.json_path}, {"images", report.images}, {"train", report.train},
                                 {"val", report.val}, {"test", report.test}, {"structures_used", report.structures_used},
                                 {"seconds", report.seconds}, {"images_per_second", report.images / std::max(report.seconds, 1e-9)}})
                     .dump()
              << std::endl;
  } else {
    std::cout << "wrote " << report.json_path << ": " << report.images << " images (train " << report.train << ", val "
              << report.val << ", test " << report.test << "), " << report.structures_used << " sentence structures, in "
              << std::fixed << std::setprecision(2) << report.seconds << " s ("
              << std::setprecision(0) << report.images / std::max(report.seconds, 1e-9) << " images/s)\n";
  }
}

void install_dataset_commands(CLI::App* group) {
  {
    auto [command, args] = add_vocabulary_command(
        group, "stats", "Images and captions per split, caption lengths, word frequencies, vocabulary coverage", run_stats,
        "Words seen fewer times in train + restval become UNK");
    command->add_option("--top", args->top, "How many of the most frequent words to list")->capture_default_str();
    command->add_flag("--json", args->json, "Print one compact JSON object");
  }
  {
    auto [command, args] = add_vocabulary_command(
        group, "vocab", "Build the vocabulary (words seen at least --min-count times in train + restval, plus PAD SOS EOS UNK)",
        run_vocab, "Words seen fewer times become UNK");
    command->add_option("--out", args->out, "Vocabulary JSON file to write")->required();
    command->add_flag("--json", args->json, "Print a compact JSON summary");
  }
  {
    auto [command, args] = add_command<MakeShapesArgs>(
        group, "make-shapes", "Write the built-in demo set: rendered shape scenes with five spatial captions each (Karpathy format)",
        run_make_shapes);
    ShapesOptions& shapes = args->shapes;
    command->add_option("--out", shapes.out_dir, "Folder to write (dataset_coco.json and images/)")->required();
    command->add_option("--images", shapes.images, "Number of images")->capture_default_str()->check(CLI::Range(int64_t(1), int64_t(10000000)));
    command->add_option("--seed", shapes.seed, "Seed: the same seed gives the same files")->capture_default_str();
    command->add_option("--style", args->style,
                        "varied: backgrounds of any hue (plain, gradient, texture), shades, rotations, outlines, blur, noise "
                        "and JPEG artefacts; classic: the first look (white, gray or black backgrounds, fixed proportions)")
        ->capture_default_str()
        ->check(CLI::IsMember({"varied", "classic"}));
    command->add_option("--val-fraction", shapes.val_fraction, "Fraction of images in val")->capture_default_str();
    command->add_option("--test-fraction", shapes.test_fraction, "Fraction of images in test")->capture_default_str();
    command->add_flag("--json", args->json, "Print a compact JSON summary");
  }
}

const bool registered = register_command({"dataset", 30, [](CLI::App& root) {
  install_dataset_commands(dataset_group(root));
}});

}  // namespace
}  // namespace expnet::cli
