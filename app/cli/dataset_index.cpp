// expnet dataset index | query: the SQLite index the studio's dataset browser reads.
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <iostream>

#include "command.h"
#include "dataset_options_cli.h"
#include "expnet/data/dataset.h"
#include "expnet/data/dataset_index.h"

namespace expnet::cli {
namespace {

struct IndexArgs {
  DatasetArgs dataset;
  std::string db;
  bool json = false;
};

void run_index(const IndexArgs& args) {
  const Dataset dataset = read_dataset(args.dataset);
  const IndexBuildReport report = build_dataset_index(dataset, args.db);
  if (args.json) {
    std::cout << nlohmann::json({{"db", args.db}, {"images", report.images}, {"captions", report.captions},
                                 {"words", report.words}, {"seconds", report.seconds}})
                     .dump()
              << std::endl;
  } else {
    std::cout << "wrote " << args.db << ": " << report.images << " images, " << report.captions << " captions, "
              << report.words << " distinct words (" << report.seconds << " s)\n";
  }
}

struct QueryArgs {
  std::string db;
  IndexQuery query;
  bool json = false;
};

void run_query(const QueryArgs& args) {
  const IndexQuery& query = args.query;
  if (!query.split.empty()) parse_split(query.split);  // a clear error before opening anything
  const DatasetIndex index(args.db);
  const IndexPage page = index.query(query);
  const int64_t pages = (page.total + query.page_size - 1) / query.page_size;
  if (args.json) {
    for (const auto& image : page.images)
      std::cout << nlohmann::ordered_json({{"cocoid", image.cocoid}, {"filepath", image.filepath}, {"filename", image.filename},
                                           {"split", image.split}, {"captions", image.captions}})
                       .dump()
                << "\n";
    std::cout.flush();
    spdlog::info("page {} of {} ({} matching images)", query.page, pages, page.total);
    return;
  }
  std::cout << page.total << " images match; page " << query.page << " of " << pages << "\n";
  for (const auto& image : page.images) {
    std::cout << image.cocoid << "  " << image.split << "  " << (image.filepath.empty() ? "" : image.filepath + "/")
              << image.filename << "\n";
    for (const auto& caption : image.captions) std::cout << "    " << caption << "\n";
  }
}

void install_index_commands(CLI::App* group) {
  {
    auto [command, args] = add_command<IndexArgs>(
        group, "index", "Build a SQLite index (images, splits, captions, tokens, full-text search) of a dataset", run_index);
    add_dataset_options(command, args->dataset);
    command->add_option("--db", args->db, "Index file to write (replaced only when the new one is complete)")->required();
    command->add_flag("--json", args->json, "Print a compact JSON summary");
  }
  {
    auto [command, args] = add_command<QueryArgs>(
        group, "query", "Page through an index: images of a split whose captions contain words", run_query);
    IndexQuery& query = args->query;
    command->add_option("--db", args->db, "Index built by expnet dataset index")->required();
    command->add_option("--split", query.split, "train, restval, val or test (default: all)");
    command->add_option("--text", query.text, "Words every matching caption contains");
    command->add_option("--page", query.page, "Page number, from 1")->capture_default_str()->check(CLI::PositiveNumber);
    command->add_option("--page-size", query.page_size, "Images per page")->capture_default_str()->check(CLI::Range(1, 10000));
    command->add_flag("--json", args->json, "One compact JSON object per image: cocoid, filepath, filename, split, captions");
  }
}

const bool registered = register_command({"dataset", 31, [](CLI::App& root) {
  install_index_commands(dataset_group(root));
}});

}  // namespace
}  // namespace expnet::cli
