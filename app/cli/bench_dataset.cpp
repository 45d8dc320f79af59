// expnet bench dataset: index a synthetic COCO-sized Karpathy file (123,287
// images, 616,767 captions) and time the browser's typical query.
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <random>

#include "bench_stats.h"
#include "command.h"

#include "expnet/system/atomic_file.h"
#include "expnet/data/data_loader.h"
#include "expnet/data/dataset.h"
#include "expnet/data/dataset_index.h"
#include "expnet/image/image_decode.h"

namespace fs = std::filesystem;

namespace expnet::cli {
namespace {

using Clock = BenchClock;

// Karpathy's split of COCO 2014.
constexpr int64_t kTrain = 82783, kRestval = 30504, kVal = 5000, kTest = 5000;
constexpr int64_t kCaptions = 616767;

// Captions of 8-16 words drawn from a Zipf law over 10,000 words; common
// English words (with "dog" at rank 38, in ~3% of captions as in COCO) lead the ranks.
std::string synthetic_karpathy(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto below = [&rng](uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = rng();
    while (x >= limit);
    return x % n;
  };
  std::vector<std::string> words = {"a", "on", "of", "the", "in", "with", "and", "is", "man", "to", "sitting", "an", "two", "at",
                                    "standing", "people", "are", "next", "white", "woman", "street", "table", "holding", "large",
                                    "person", "top", "down", "group", "field", "small", "tennis", "near", "front", "his", "train",
                                    "plate", "room", "dog", "riding", "red", "cat", "young", "by", "water", "baseball", "playing",
                                    "while", "bathroom", "sign", "pizza", "snow", "kitchen", "bus", "food", "grass", "it", "black",
                                    "up", "ball", "green", "blue"};
  for (int i = static_cast<int>(words.size()); i < 10000; ++i) {
    std::string w;
    for (int k = 0, n = 3 + static_cast<int>(below(6)); k < n; ++k) w += static_cast<char>('a' + below(26));
    words.push_back(w + std::to_string(i));  // unique
  }
  std::vector<uint64_t> cumulative(words.size());
  uint64_t total = 0;
  for (size_t r = 0; r < words.size(); ++r) cumulative[r] = total += 1000000000ULL / (r + 1);
  auto word = [&]() -> const std::string& {
    const uint64_t x = below(total);
    return words[static_cast<size_t>(std::upper_bound(cumulative.begin(), cumulative.end(), x) - cumulative.begin())];
  };
  const int64_t images = kTrain + kRestval + kVal + kTest;
  const int64_t extra = kCaptions - 5 * images;  // images with a sixth caption
  std::string out = "{\"dataset\":\"coco\",\"images\":[";
  out.reserve(120ull << 20);
  for (int64_t i = 0; i < images; ++i) {
    const char* split = i < kTrain ? "train" : i < kTrain + kRestval ? "restval" : i < kTrain + kRestval + kVal ? "val" : "test";
    const char* folder = i < kTrain ? "train2014" : "val2014";
    char name[64];
    std::snprintf(name, sizeof name, "COCO_%s_%012lld.jpg", folder, static_cast<long long>(i + 1));
    if (i) out += ',';
    out += "{\"cocoid\":" + std::to_string(i + 1) + ",\"filepath\":\"" + folder + "\",\"filename\":\"" + name +
           "\",\"split\":\"" + split + "\",\"sentences\":[";
    for (int c = 0, n = 5 + (i < extra ? 1 : 0); c < n; ++c) {
      std::string raw = "A";
      for (int k = 0, len = 8 + static_cast<int>(below(9)); k < len; ++k) raw += " " + word();
      raw += ".";
      out += std::string(c ? "," : "") + "{\"raw\":\"" + raw + "\"}";
    }
    out += "]}";
  }
  out += "]}";
  return out;
}

struct DatasetBenchArgs {
  int repeats = 21;
  bool keep = false;
  std::string work;  // default: a temporary folder
  bool json = false;
};

void run(const DatasetBenchArgs& args) {
  const int repeats = args.repeats;
  const bool json = args.json;
  const fs::path work = args.work.empty() ? fs::temp_directory_path() / ("expnet-bench-dataset-" + std::to_string(::getpid())) : fs::path(args.work);
  fs::create_directories(work);
  const std::string data = (work / "dataset_coco.json").string(), db = (work / "index.sqlite").string();
  auto start = Clock::now();
  write_file_atomic(data, synthetic_karpathy(2026));
  const double generate_s = seconds_since(start);
  spdlog::info("synthetic Karpathy file {} ({:.0f} MB) in {:.1f} s", data, fs::file_size(data) / 1e6, generate_s);

  start = Clock::now();
  const Dataset dataset = load_dataset(data);
  const double load_s = seconds_since(start);
  spdlog::info("read and cleaned {} images, {} captions in {:.1f} s", dataset.images.size(), dataset.caption_count(), load_s);
  const IndexBuildReport report = build_dataset_index(dataset, db);
  const double index_total_s = seconds_since(start);
  spdlog::info("indexed in {:.1f} s (read + index {:.1f} s)", report.seconds, index_total_s);

  const DatasetIndex index(db);
  IndexQuery query;
  query.split = "val";
  query.text = "dog";
  query.page = 5;
  query.page_size = 20;
  std::vector<double> page_ms, total_ms;
  IndexPage page;
  for (int r = 0; r < repeats; ++r) {
    auto q = Clock::now();
    query.count_total = false;
    page = index.query(query);
    page_ms.push_back(ms_since(q));
    q = Clock::now();
    query.count_total = true;
    page = index.query(query);
    total_ms.push_back(ms_since(q));
  }
  const double db_mb = static_cast<double>(fs::file_size(db)) / 1e6;
  if (json) {
    std::cout << nlohmann::json({{"images", report.images}, {"captions", report.captions}, {"load_s", load_s},
                                 {"index_s", report.seconds}, {"read_and_index_s", index_total_s}, {"db_mb", db_mb},
                                 {"query", "captions containing 'dog' in val, page 5 of 20"}, {"query_ms_median", median(page_ms)},
                                 {"query_with_count_ms_median", median(total_ms)}, {"matching_images", page.total},
                                 {"page_images", page.images.size()}, {"repeats", repeats}})
                     .dump()
              << std::endl;
  } else {
    std::cout << std::fixed << std::setprecision(2) << "synthetic COCO-sized Karpathy file: " << report.images << " images, "
              << report.captions << " captions\n"
              << "read + clean captions: " << load_s << " s\n"
              << "build index: " << report.seconds << " s (total " << index_total_s << " s, target < 60 s), " << db_mb << " MB\n"
              << "query \"dog\" in val, page 5 (20 per page): " << median(page_ms) << " ms median of " << repeats
              << " (target < 50 ms); with the match count: " << median(total_ms) << " ms; " << page.total
              << " matching images, " << page.images.size() << " on the page\n";
  }
  if (!args.keep) fs::remove_all(work);
}

// Images per second through the loader with 1 and 2 worker threads, images
// decoded as training decodes them (load_image_rgb: EXIF, bomb guard,
// truncation checks, RGB).
struct LoaderBenchArgs {
  std::string dataset;
  int64_t batches = 60, batch_size = 48;
  bool json = false;
};

void run_loader(const LoaderBenchArgs& args) {
  const int64_t batches = args.batches, batch_size = args.batch_size;
  const bool json = args.json;
  const Dataset dataset = load_dataset(args.dataset);
  const Vocabulary vocabulary = build_vocabulary(dataset, 1).vocabulary;
  const ImageSource decode = [](const std::string& file) { return load_image_rgb(file); };
  nlohmann::json out = {{"dataset", dataset.source}, {"batch_size", batch_size}, {"batches", batches}};
  for (const int workers : {1, 2}) {
    LoaderOptions options;
    options.batch_size = batch_size;
    options.workers = workers;
    options.prefetch = 2 * workers;
    DataLoader loader(dataset, vocabulary, options, decode);
    loader.next();  // warm-up: first batch, threads started
    int64_t images = 0;
    const auto start = Clock::now();
    for (int64_t b = 0; b < batches; ++b) images += static_cast<int64_t>(loader.next().size());
    const double rate = static_cast<double>(images) / seconds_since(start);
    out["images_per_second_" + std::to_string(workers) + "_threads"] = rate;
    if (!json)
      std::cout << std::fixed << std::setprecision(0) << "loader, caption-wise, batch " << batch_size << ", " << workers
                << " worker thread" << (workers > 1 ? "s" : "") << ": " << rate << " images/s (" << images << " images)\n";
  }
  if (json) std::cout << out.dump() << std::endl;
}

const bool registered_loader = register_command({"bench", 201, [](CLI::App& root) {
  auto [command, args] = add_command<LoaderBenchArgs>(
      bench_group(root), "loader", "Images per second through the training loader with 1 and 2 worker threads", run_loader);
  command->add_option("--dataset", args->dataset, "Dataset with images (e.g. one written by expnet dataset make-shapes)")->required();
  command->add_option("--batches", args->batches, "Batches timed per thread count")->capture_default_str()->check(CLI::PositiveNumber);
  command->add_option("--batch-size", args->batch_size, "Items per batch")->capture_default_str()->check(CLI::PositiveNumber);
  command->add_flag("--json", args->json, "Print one compact JSON object");
}});

const bool registered = register_command({"bench", 200, [](CLI::App& root) {
  auto [command, args] = add_command<DatasetBenchArgs>(
      bench_group(root), "dataset", "Index a synthetic COCO-sized dataset (123k images, 616k captions) and time a query", run);
  command->add_option("--repeats", args->repeats, "Query repeats (median reported)")->capture_default_str()->check(CLI::PositiveNumber);
  command->add_option("--work", args->work, "Folder for the synthetic file and index (default: a temporary folder)");
  command->add_flag("--keep", args->keep, "Keep the synthetic file and the index");
  command->add_flag("--json", args->json, "Print one compact JSON object");
}});

}  // namespace
}  // namespace expnet::cli
