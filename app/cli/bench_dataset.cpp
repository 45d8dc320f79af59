// expnet bench dataset: index a synthetic COCO-sized Karpathy file (123,287
// images, 616,767 captions) with `expnet dataset index` and time the
// browser's typical queries.
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
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
extern char** environ;

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
  bool reference = false;
  std::string work;  // default: a temporary folder
  bool json = false;
};

// One run of this program as a child process: wall seconds from start to
// exit and its peak RSS (getrusage's ru_maxrss of the child), so the build's
// figures are its own, not the generator's. Its stdout goes to `out_file`.
struct ChildRun {
  double seconds = 0, peak_rss_mb = 0;
  nlohmann::json out;
};

ChildRun run_expnet(std::vector<std::string> args, const std::string& out_file) {
  args.insert(args.begin(), "/proc/self/exe");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const auto start = Clock::now();
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) throw std::runtime_error(std::string("cannot start expnet for the benchmark: ") + std::strerror(spawned));
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) != pid) throw std::runtime_error("lost the benchmark's child process");
  ChildRun run;
  run.seconds = seconds_since(start);
  run.peak_rss_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("expnet " + args[1] + " " + args[2] + " failed in the benchmark (its error is above)");
  std::ifstream in(out_file);
  run.out = nlohmann::json::parse(in, nullptr, false);
  return run;
}

// An evaluation store (schema: expnet/metrics/sample_evaluation.h) scoring
// every val image with a random CIDEr-D, for the score-sorted page.
std::string write_synthetic_evaluation(const fs::path& work, const DatasetIndex& index) {
  const std::string path = (work / "evaluations.sqlite").string();
  fs::remove(path);
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  std::string sql =
      "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT); INSERT INTO meta VALUES('version', '1');"
      "CREATE TABLE evaluations(id INTEGER PRIMARY KEY, checkpoint_sha256 TEXT, options TEXT, model TEXT, dataset TEXT, split TEXT,"
      " created TEXT, UNIQUE(checkpoint_sha256, options, dataset, split));"
      "INSERT INTO evaluations VALUES(1, 'synthetic', '{}', 'none', 'bench', 'val', '');"
      "CREATE TABLE samples(evaluation_id INTEGER, cocoid INTEGER, image TEXT, caption TEXT, cider_d REAL, bleu4 REAL, error TEXT,"
      " PRIMARY KEY(evaluation_id, cocoid)); BEGIN;";
  std::mt19937_64 rng(5);
  IndexQuery val;
  val.split = "val";
  val.page_size = 10000;
  for (const auto& image : index.query(val).images)
    sql += "INSERT INTO samples VALUES(1, " + std::to_string(image.cocoid) + ", '', 'a caption', " +
           std::to_string(static_cast<double>(rng() % 3000) / 1000.0) + ", 0.3, NULL);";
  sql += "COMMIT;";
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  const std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  if (rc != SQLITE_OK) throw std::runtime_error("cannot write the benchmark's evaluation store '" + path + "': " + message);
  return path;
}

// Median wall milliseconds of a query, and its last answer.
struct QueryTiming {
  double ms = 0;
  IndexPage page;
};

QueryTiming time_query(const DatasetIndex& index, const IndexQuery& query, int repeats) {
  QueryTiming timing;
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    timing.page = index.query(query);
    ms.push_back(ms_since(start));
  }
  timing.ms = median(ms);
  return timing;
}

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

  // `expnet dataset index` as a user runs it: streaming build from the file.
  const ChildRun build = run_expnet({"dataset", "index", "--dataset", data, "--db", db, "--json"}, (work / "index.json").string());
  spdlog::info("indexed in {:.2f} s end to end, peak RSS {:.0f} MB", build.seconds, build.peak_rss_mb);
  ChildRun reference;
  if (args.reference) {
    const std::string reference_db = (work / "index-in-memory.sqlite").string();
    reference = run_expnet({"dataset", "index", "--in-memory", "--dataset", data, "--db", reference_db, "--json"},
                           (work / "index-in-memory.json").string());
    spdlog::info("in-memory reference (load_dataset + build_dataset_index): {:.2f} s, peak RSS {:.0f} MB", reference.seconds,
                 reference.peak_rss_mb);
    fs::remove(reference_db);
  }

  const DatasetIndex index(db);
  IndexQuery by_split;  // the browser's first view of a split
  by_split.split = "train";
  by_split.page = 10;
  by_split.page_size = 100;
  IndexQuery words;  // two words typed in the search box, all splits
  words.text = "white dog";
  words.page_size = 100;
  IndexQuery by_length = by_split;
  by_length.sort = IndexSort::caption_length;
  IndexQuery combined = words;  // split, words and a sort at once
  combined.split = "train";
  combined.page = 2;
  combined.sort = IndexSort::caption_length_descending;
  IndexQuery dog_val;  // the first benchmark's query, without and with the match count
  dog_val.split = "val";
  dog_val.text = "dog";
  dog_val.page = 5;
  dog_val.page_size = 20;
  dog_val.count_total = false;
  const QueryTiming split_page = time_query(index, by_split, repeats);
  const QueryTiming words_page = time_query(index, words, repeats);
  const QueryTiming length_page = time_query(index, by_length, repeats);
  const QueryTiming combined_page = time_query(index, combined, repeats);
  IndexQuery by_score;  // val's worst captions first, from a store scoring all 5,000
  by_score.split = "val";
  by_score.page = 3;
  by_score.page_size = 100;
  by_score.sort = IndexSort::score_ascending;
  by_score.evaluation_db = write_synthetic_evaluation(work, index);
  by_score.evaluation_id = 1;
  const QueryTiming score_page = time_query(index, by_score, repeats);
  const QueryTiming dog_page = time_query(index, dog_val, repeats);
  dog_val.count_total = true;
  const QueryTiming dog_counted = time_query(index, dog_val, repeats);

  // How soon a cancel can take effect: the longest wait between two of the build's questions.
  double longest_gap_ms = 0;
  {
    auto last = Clock::now();
    IndexBuildControl control;
    control.cancelled = [&] {
      longest_gap_ms = std::max(longest_gap_ms, ms_since(last));
      last = Clock::now();
      return false;
    };
    const std::string again = (work / "index-cancel-check.sqlite").string();
    build_dataset_index_from_file(data, again, {}, control);
    fs::remove(again);
  }

  const double db_mb = static_cast<double>(fs::file_size(db)) / 1e6;
  const auto images = build.out.value("images", int64_t{0}), captions = build.out.value("captions", int64_t{0});
  if (json) {
    nlohmann::json out = {{"images", images}, {"captions", captions}, {"build_s", build.seconds},
                          {"build_peak_rss_mb", build.peak_rss_mb}, {"index_s", build.out.value("seconds", 0.0)}, {"db_mb", db_mb},
                          {"cancel_check_gap_ms_max", longest_gap_ms},
                          {"split_page_ms_median", split_page.ms}, {"fts_two_words_page_ms_median", words_page.ms},
                          {"fts_two_words_matching_images", words_page.page.total}, {"length_sorted_page_ms_median", length_page.ms},
                          {"split_words_length_page_ms_median", combined_page.ms}, {"score_sorted_page_ms_median", score_page.ms},
                          {"query", "captions containing 'dog' in val, page 5 of 20"}, {"query_ms_median", dog_page.ms},
                          {"query_with_count_ms_median", dog_counted.ms}, {"matching_images", dog_counted.page.total},
                          {"page_images", dog_counted.page.images.size()}, {"repeats", repeats}};
    if (args.reference) {
      out["reference_build_s"] = reference.seconds;
      out["reference_build_peak_rss_mb"] = reference.peak_rss_mb;
    }
    std::cout << out.dump() << std::endl;
  } else {
    std::cout << std::fixed << std::setprecision(2) << "synthetic COCO-sized Karpathy file: " << images << " images, " << captions
              << " captions\n"
              << "build index (expnet dataset index, streaming): " << build.seconds << " s end to end (target <= 10 s), peak RSS "
              << std::setprecision(0) << build.peak_rss_mb << " MB, " << db_mb << " MB index\n"
              << std::setprecision(2) << "longest wait between two cancellation checks in a build: " << longest_gap_ms
              << " ms (target ~200 ms)\n";
    if (args.reference)
      std::cout << "  reference (--in-memory: load_dataset + build_dataset_index): " << reference.seconds << " s, peak RSS "
                << std::setprecision(0) << reference.peak_rss_mb << " MB\n"
                << std::setprecision(2);
    std::cout << "page 10 of train, 100 per page, with the count: " << split_page.ms << " ms median of " << repeats
              << " (target <= 10 ms)\n"
              << "\"white dog\" in all splits, page 1 of 100, with the count: " << words_page.ms << " ms (target <= 50 ms); "
              << words_page.page.total << " matching images\n"
              << "page 10 of train by caption length, 100 per page, with the count: " << length_page.ms << " ms\n"
              << "\"white dog\" in train, longest captions first, page 2 of 100, with the count: " << combined_page.ms << " ms\n"
              << "page 3 of val by CIDEr-D (worst first, 5,000 scored), 100 per page, with the count: " << score_page.ms << " ms\n"
              << "\"dog\" in val, page 5 (20 per page): " << dog_page.ms << " ms; with the match count: " << dog_counted.ms << " ms; "
              << dog_counted.page.total << " matching images, " << dog_counted.page.images.size() << " on the page\n";
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
      bench_group(root), "dataset", "Index a synthetic COCO-sized dataset (123k images, 616k captions) and time the browser's queries", run);
  command->add_option("--repeats", args->repeats, "Query repeats (median reported)")->capture_default_str()->check(CLI::PositiveNumber);
  command->add_option("--work", args->work, "Folder for the synthetic file and index (default: a temporary folder)");
  command->add_flag("--keep", args->keep, "Keep the synthetic file and the index");
  command->add_flag("--reference", args->reference,
                    "Also time the in-memory build (expnet dataset index --in-memory) the streaming one replaced");
  command->add_flag("--json", args->json, "Print one compact JSON object");
}});

}  // namespace
}  // namespace expnet::cli
