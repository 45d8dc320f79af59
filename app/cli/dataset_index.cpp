// expnet dataset index | query: the SQLite index the studio's dataset browser reads.
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <iostream>

#include "command.h"
#include "expnet/data/dataset.h"
#include "expnet/data/dataset_index.h"

namespace expnet::cli {
namespace {

void install_index(CLI::App* group) {
  auto* command = group->add_subcommand("index", "Build a SQLite index (images, splits, captions, tokens, full-text search) of a dataset");
  auto runtime = add_runtime_options(command);
  struct Args {
    std::string dataset, format = "auto", image_root, db;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  command->add_option("--dataset", args->dataset, "Dataset file, or a folder holding dataset_coco.json")->required();
  command->add_option("--format", args->format, "auto, karpathy, coco, csv or jsonl")->capture_default_str();
  command->add_option("--image-root", args->image_root, "Folder the image paths are relative to (default: the dataset file's folder)");
  command->add_option("--db", args->db, "Index file to write (replaced only when the new one is complete)")->required();
  command->add_flag("--json", args->json, "Print a compact JSON summary");
  command->callback([=] {
    apply_runtime(*runtime);
    DatasetLoadOptions options;
    options.format = parse_format(args->format);
    options.image_root = args->image_root;
    spdlog::info("reading {}", args->dataset);
    const Dataset dataset = load_dataset(args->dataset, options);
    spdlog::info("indexing {} images, {} captions", dataset.images.size(), dataset.caption_count());
    const IndexBuildReport report = build_dataset_index(dataset, args->db);
    if (args->json) {
      std::cout << nlohmann::json({{"db", args->db}, {"images", report.images}, {"captions", report.captions},
                                   {"words", report.words}, {"seconds", report.seconds}})
                       .dump()
                << std::endl;
    } else {
      std::cout << "wrote " << args->db << ": " << report.images << " images, " << report.captions << " captions, "
                << report.words << " distinct words (" << report.seconds << " s)\n";
    }
  });
}

void install_query(CLI::App* group) {
  auto* command = group->add_subcommand("query", "Page through an index: images of a split whose captions contain words");
  auto runtime = add_runtime_options(command);
  auto db = std::make_shared<std::string>();
  auto query = std::make_shared<IndexQuery>();
  auto json = std::make_shared<bool>(false);
  command->add_option("--db", *db, "Index built by expnet dataset index")->required();
  command->add_option("--split", query->split, "train, restval, val or test (default: all)");
  command->add_option("--text", query->text, "Words every matching caption contains");
  command->add_option("--page", query->page, "Page number, from 1")->capture_default_str()->check(CLI::PositiveNumber);
  command->add_option("--page-size", query->page_size, "Images per page")->capture_default_str()->check(CLI::Range(1, 10000));
  command->add_flag("--json", *json, "One compact JSON object per image: cocoid, filepath, filename, split, captions");
  command->callback([=] {
    apply_runtime(*runtime);
    if (!query->split.empty()) parse_split(query->split);  // a clear error before opening anything
    const DatasetIndex index(*db);
    const IndexPage page = index.query(*query);
    if (*json) {
      for (const auto& image : page.images)
        std::cout << nlohmann::ordered_json({{"cocoid", image.cocoid}, {"filepath", image.filepath}, {"filename", image.filename},
                                     {"split", image.split}, {"captions", image.captions}})
                         .dump()
                  << "\n";
      std::cout.flush();
      spdlog::info("page {} of {} ({} matching images)", query->page,
                   (page.total + query->page_size - 1) / query->page_size, page.total);
      return;
    }
    const int64_t pages = (page.total + query->page_size - 1) / query->page_size;
    std::cout << page.total << " images match; page " << query->page << " of " << pages << "\n";
    for (const auto& image : page.images) {
      std::cout << image.cocoid << "  " << image.split << "  " << (image.filepath.empty() ? "" : image.filepath + "/")
                << image.filename << "\n";
      for (const auto& caption : image.captions) std::cout << "    " << caption << "\n";
    }
  });
}

const bool registered = register_command({"dataset", 31, [](CLI::App& root) {
  auto* group = command_group(root, "dataset", "Captioning datasets: statistics, vocabulary, demo set, index");
  install_index(group);
  install_query(group);
}});

}  // namespace
}  // namespace expnet::cli
