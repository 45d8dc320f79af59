// expnet dataset stats | vocab: what a captioning dataset holds, and its vocabulary.
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <iomanip>
#include <iostream>
#include <mutex>

#include "command.h"
#include "expnet/data/dataset.h"
#include "expnet/data/shapes_dataset.h"

namespace expnet::cli {
namespace {

struct DatasetArgs {
  std::string path;
  std::string format = "auto";
  std::string image_root;
};

void add_dataset_options(CLI::App* command, DatasetArgs& args) {
  command->add_option("--dataset", args.path, "Dataset file, or a folder holding dataset_coco.json")->required();
  command->add_option("--format", args.format, "auto, karpathy, coco, csv or jsonl")->capture_default_str();
  command->add_option("--image-root", args.image_root, "Folder the image paths are relative to (default: the dataset file's folder)");
}

Dataset load(const DatasetArgs& args) {
  DatasetLoadOptions options;
  options.format = parse_format(args.format);
  options.image_root = args.image_root;
  spdlog::info("reading {}", args.path);
  Dataset dataset = load_dataset(args.path, options);
  spdlog::info("{} ({}): {} images, {} captions", dataset.source, format_name(dataset.format), dataset.images.size(),
               dataset.caption_count());
  return dataset;
}

void print_stats(const Dataset& dataset, const DatasetStats& stats, int min_count, bool as_json) {
  if (as_json) {
    nlohmann::json histogram = nlohmann::json::object();
    for (const auto& [length, count] : stats.caption_length_histogram) histogram[std::to_string(length)] = count;
    nlohmann::json top = nlohmann::json::array();
    for (const auto& [word, count] : stats.top_words) top.push_back({word, count});
    nlohmann::json out = {{"source", dataset.source},
                          {"format", format_name(dataset.format)},
                          {"image_root", dataset.image_root},
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
  std::cout << "dataset: " << dataset.source << " (" << format_name(dataset.format) << ")\n"
            << "image root: " << dataset.image_root << "\n"
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
  for (const auto& [word, count] : stats.top_words) std::cout << " " << word << "(" << count << ")";
  std::cout << "\n";
}

void install_stats(CLI::App* group) {
  auto* command = group->add_subcommand("stats", "Images and captions per split, caption lengths, word frequencies, vocabulary coverage");
  auto runtime = add_runtime_options(command);
  auto args = std::make_shared<DatasetArgs>();
  add_dataset_options(command, *args);
  auto min_count = std::make_shared<int>(5);
  auto top = std::make_shared<size_t>(20);
  auto json = std::make_shared<bool>(false);
  command->add_option("--min-count", *min_count, "Words seen fewer times in train + restval become UNK")->capture_default_str()->check(CLI::PositiveNumber);
  command->add_option("--top", *top, "How many of the most frequent words to list")->capture_default_str();
  command->add_flag("--json", *json, "Print one compact JSON object");
  command->callback([=] {
    apply_runtime(*runtime);
    const Dataset dataset = load(*args);
    print_stats(dataset, compute_stats(dataset, *min_count, *top), *min_count, *json);
  });
}

void install_vocab(CLI::App* group) {
  auto* command = group->add_subcommand("vocab", "Build the vocabulary (words seen at least --min-count times in train + restval, plus PAD SOS EOS UNK)");
  auto runtime = add_runtime_options(command);
  auto args = std::make_shared<DatasetArgs>();
  add_dataset_options(command, *args);
  auto min_count = std::make_shared<int>(5);
  auto out = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  command->add_option("--min-count", *min_count, "Words seen fewer times become UNK")->capture_default_str()->check(CLI::PositiveNumber);
  command->add_option("--out", *out, "Vocabulary JSON file to write")->required();
  command->add_flag("--json", *json, "Print a compact JSON summary");
  command->callback([=] {
    apply_runtime(*runtime);
    const Dataset dataset = load(*args);
    const VocabularyBuild build = build_vocabulary(dataset, *min_count);
    if (build.total_tokens == 0)
      throw std::runtime_error(dataset.source + " has no train or restval captions, so there is nothing to build a vocabulary from");
    build.vocabulary.save_json(*out);
    const double coverage = 1.0 - static_cast<double>(build.unk_tokens) / static_cast<double>(build.total_tokens);
    if (*json) {
      std::cout << nlohmann::json({{"out", *out}, {"size", build.vocabulary.size()}, {"kept_words", build.kept_words},
                                   {"unk_words", build.dropped_words}, {"training_tokens", build.total_tokens},
                                   {"unk_tokens", build.unk_tokens}, {"coverage", coverage}, {"min_count", *min_count}})
                       .dump()
                << std::endl;
    } else {
      std::cout << "wrote " << *out << ": " << build.vocabulary.size() << " entries (" << build.kept_words
                << " words seen >= " << *min_count << " times + PAD SOS EOS UNK); " << build.dropped_words
                << " rarer words become UNK (" << build.unk_tokens << " of " << build.total_tokens
                << " training tokens, coverage " << std::fixed << std::setprecision(2) << 100.0 * coverage << "%)\n";
    }
  });
}

void install_make_shapes(CLI::App* group) {
  auto* command = group->add_subcommand("make-shapes", "Write the built-in demo set: rendered shape scenes with five spatial captions each (Karpathy format)");
  auto runtime = add_runtime_options(command);
  auto options = std::make_shared<ShapesOptions>();
  auto json = std::make_shared<bool>(false);
  command->add_option("--out", options->out_dir, "Folder to write (dataset_coco.json and images/)")->required();
  command->add_option("--images", options->images, "Number of images")->capture_default_str()->check(CLI::Range(int64_t(1), int64_t(10000000)));
  command->add_option("--seed", options->seed, "Seed: the same seed gives the same files")->capture_default_str();
  command->add_option("--val-fraction", options->val_fraction, "Fraction of images in val")->capture_default_str();
  command->add_option("--test-fraction", options->test_fraction, "Fraction of images in test")->capture_default_str();
  command->add_flag("--json", *json, "Print a compact JSON summary");
  command->callback([=] {
    apply_runtime(*runtime);
    options->threads = runtime->threads;
    int64_t last_logged = 0;
    std::mutex log_mutex;
    const ShapesReport report = make_shapes_dataset(*options, [&](int64_t done, int64_t total) {
      std::lock_guard<std::mutex> lock(log_mutex);
      if (done == total || done - last_logged >= std::max<int64_t>(total / 10, 1)) {
        last_logged = done;
        spdlog::info("rendered {}/{} images", done, total);
      }
    });
    if (*json) {
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
  });
}

const bool registered = register_command({"dataset", 30, [](CLI::App& root) {
  auto* group = command_group(root, "dataset", "Captioning datasets: statistics, vocabulary, demo set, index");
  install_stats(group);
  install_vocab(group);
  install_make_shapes(group);
}});

}  // namespace
}  // namespace expnet::cli
