// expnet dataset index | query: the SQLite index the studio's dataset browser reads.
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>

#include "command.h"
#include "dataset_options_cli.h"
#include "expnet/text/terminal_text.h"
#include "expnet/data/dataset.h"
#include "expnet/data/dataset_index.h"

namespace expnet::cli {
namespace {

struct IndexArgs {
  DatasetArgs dataset;
  std::string db;
  bool in_memory = false;
  bool json = false;
};

void run_index(const IndexArgs& args) {
  IndexBuildReport report;
  if (args.in_memory) {
    report = build_dataset_index(read_dataset(args.dataset), args.db);
  } else {
    DatasetLoadOptions options;
    options.format = parse_format(args.dataset.format);
    options.image_root = args.dataset.image_root;
    IndexBuildControl control;
    int64_t logged = 0;
    control.progress = [&logged](int64_t done, int64_t total) {
      if (done - logged < std::max<int64_t>(total / 4, 1) && done != total) return;
      logged = done;
      spdlog::info("indexed {}/{} images", done, total);
    };
    report = build_dataset_index_from_file(args.dataset.path, args.db, options, control);
  }
  if (args.json) {
    std::cout << nlohmann::json({{"db", json_safe(args.db)}, {"images", report.images}, {"captions", report.captions},
                                 {"words", report.words}, {"seconds", report.seconds}})
                     .dump()
              << std::endl;
  } else {
    std::cout << "wrote " << terminal_safe(args.db) << ": " << report.images << " images, " << report.captions << " captions, "
              << report.words << " distinct words (" << report.seconds << " s)\n";
  }
}

struct QueryArgs {
  std::string db;
  IndexQuery query;
  std::string sort = "id";
  bool json = false;
};

IndexSort parse_sort(const std::string& name) {
  if (name == "length") return IndexSort::caption_length;
  if (name == "length-desc") return IndexSort::caption_length_descending;
  if (name == "score") return IndexSort::score_ascending;
  if (name == "score-desc") return IndexSort::score_descending;
  return IndexSort::id;
}

void run_query(const QueryArgs& args) {
  IndexQuery query = args.query;
  query.sort = parse_sort(args.sort);
  if (!query.split.empty()) parse_split(query.split);  // a clear error before opening anything
  if ((query.sort == IndexSort::score_ascending || query.sort == IndexSort::score_descending) &&
      (query.evaluation_db.empty() || query.evaluation_id <= 0))
    throw std::runtime_error("--sort " + args.sort + " needs an evaluation: add --eval-db FILE --evaluation ID");
  if (query.evaluation_db.empty() != (query.evaluation_id <= 0))
    throw std::runtime_error("--eval-db and --evaluation go together: the store file and the id of one of its evaluations");
  const DatasetIndex index(args.db);
  const IndexPage page = index.query(query);
  const int64_t pages = (page.total + query.page_size - 1) / query.page_size;
  if (args.json) {
    for (const auto& image : page.images) {
      // Names and captions come from the dataset file: any bytes (json_safe, or dump() throws).
      nlohmann::ordered_json captions = nlohmann::ordered_json::array();
      for (const auto& caption : image.captions) captions.push_back(json_safe(caption));
      nlohmann::ordered_json line = {{"cocoid", image.cocoid}, {"filepath", json_safe(image.filepath)},
                                     {"filename", json_safe(image.filename)}, {"split", json_safe(image.split)},
                                     {"captions", captions}};
      if (query.sort == IndexSort::caption_length || query.sort == IndexSort::caption_length_descending)
        line["caption_length"] = image.caption_length;
      if (!query.evaluation_db.empty()) {
        line["evaluated"] = image.evaluated;
        if (image.evaluated) {
          line["model_caption"] = json_safe(image.model_caption);
          line["cider_d"] = image.cider_d;
          line["bleu4"] = image.bleu4;
        }
      }
      std::cout << line.dump() << "\n";
    }
    std::cout.flush();
    spdlog::info("page {} of {} ({} matching images)", query.page, pages, page.total);
    return;
  }
  std::cout << page.total << " images match; page " << query.page << " of " << pages << "\n";
  for (const auto& image : page.images) {
    std::cout << image.cocoid << "  " << terminal_safe(image.split) << "  "
              << terminal_safe((image.filepath.empty() ? "" : image.filepath + "/") + image.filename);
    if (query.sort == IndexSort::caption_length || query.sort == IndexSort::caption_length_descending)
      std::cout << "  (" << image.caption_length << " words per caption)";
    std::cout << "\n";
    if (image.evaluated)
      std::cout << "  model: " << terminal_safe(image.model_caption) << "  (CIDEr-D " << image.cider_d << ", BLEU-4 " << image.bleu4 << ")\n";
    for (const auto& caption : image.captions) std::cout << "    " << terminal_safe(caption) << "\n";
  }
}

void install_index_commands(CLI::App* group) {
  {
    auto [command, args] = add_command<IndexArgs>(
        group, "index", "Build a SQLite index (images, splits, captions, tokens, full-text search) of a dataset", run_index);
    add_dataset_options(command, args->dataset);
    command->add_option("--db", args->db, "Index file to write: replaced only when the new one is complete, and only if it is an index, empty or missing (never a store, other file or link)")->required();
    command->add_flag("--in-memory", args->in_memory,
                      "Read the whole dataset first (load_dataset), then index it: the slower reference the streaming build is checked against");
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
    command->add_option("--sort", args->sort,
                        "id; length (mean words per caption, shortest first); length-desc; score (CIDEr-D, worst first) or "
                        "score-desc, with --eval-db and --evaluation (unscored images last)")
        ->capture_default_str()
        ->check(CLI::IsMember({"id", "length", "length-desc", "score", "score-desc"}));
    command->add_option("--eval-db", query.evaluation_db, "Evaluation store (expnet eval) whose captions and scores to show");
    command->add_option("--evaluation", query.evaluation_id, "Id of the evaluation in --eval-db")->check(CLI::PositiveNumber);
    command->add_flag("--json", args->json,
                      "One compact JSON object per image: cocoid, filepath, filename, split, captions (and caption_length "
                      "with a length sort; evaluated, model_caption, cider_d, bleu4 with an evaluation)");
  }
}

const bool registered = register_command({"dataset", 31, [](CLI::App& root) {
  install_index_commands(dataset_group(root));
}});

}  // namespace
}  // namespace expnet::cli
