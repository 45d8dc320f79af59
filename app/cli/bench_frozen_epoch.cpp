// expnet bench frozen-epoch: a frozen-backbone XE epoch reading the feature
// cache (expnet/data/feature_cache.h) against the same epoch running the
// backbone on every batch, and how many epochs repay extracting the cache.
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "bench_stats.h"
#include "command.h"
#include "expnet/data/data_loader.h"
#include "expnet/data/dataset.h"
#include "expnet/data/feature_cache.h"
#include "expnet/data/shapes_dataset.h"
#include "expnet/image/image_decode.h"
#include "expnet/image/preprocess.h"
#include "expnet/model/expansion_net.h"
#include "expnet/model/model_config.h"
#include "expnet/text/vocabulary.h"
#include "expnet/train/radam.h"
#include "expnet/train/train_steps.h"

namespace fs = std::filesystem;

namespace expnet::cli {
namespace {

struct BenchArgs {
  std::string dataset, model = "shapes-demo", work;
  int64_t images = 300, batch = 32, epochs = 3, max_batches = 0;
  int workers = 2;
  bool json = false;
};

void run_bench(const BenchArgs& a) {  // add_command applies the runtime options first
  const bool temporary = a.work.empty();
  const std::string work =
      temporary ? (fs::temp_directory_path() / ("expnet-bench-frozen-" + std::to_string(::getpid()))).string() : a.work;
  fs::create_directories(work);
  std::string dataset_path = a.dataset;
  if (dataset_path.empty()) {
    ShapesOptions so;
    so.out_dir = work + "/shapes";
    so.images = a.images;
    so.seed = 1;
    dataset_path = make_shapes_dataset(so).json_path;
  }
  const Dataset dataset = load_dataset(dataset_path);
  const Vocabulary vocab = build_vocabulary(dataset, 1).vocabulary;
  const ModelConfig config = a.model == "shapes-demo" ? demo_model_config() : resolve_model_config(a.model);
  const torch::Device device(current_device());
  torch::manual_seed(1);
  ExpansionNet model(config, static_cast<int64_t>(vocab.size()));
  model->to(device);

  // One-off: the cache of all training images.
  FeatureCacheHeader header;
  std::vector<std::string> paths;
  std::vector<int64_t> row_of_image(dataset.images.size(), -1);
  for (size_t i = 0; i < dataset.images.size(); ++i)
    if (is_training_split(dataset.images[i].split)) {
      row_of_image[i] = header.rows();
      header.ids.push_back(dataset.images[i].cocoid);
      paths.push_back(dataset.image_path(dataset.images[i]));
    }
  header.model_config_hash = feature_config_hash(config);
  header.backbone = backbone_identity(*model->swin_transf);
  header.image_size = config.swin_img_size;
  header.chunk_rows = a.batch;
  header.splits = "train+restval";
  header.dataset = dataset.source;
  header.source = "bench";
  const std::string cache_path = work + "/frozen.fcache";
  fs::remove(cache_path);
  FeatureExtractOptions fo;
  fo.out = cache_path;
  model->swin_transf->eval();
  double extract_s = 0;
  {
    torch::NoGradGuard no_grad;
    extract_s = extract_feature_cache(header, paths, [&](const at::Tensor& x) { return model->backbone(x.to(device)); }, fo).seconds;
  }
  FeatureCacheReader cache(cache_path);

  // The trainer's frozen XE step (expnet/train/train_steps.h): captioner trains, backbone frozen in eval mode.
  const auto params = trainable_parameters(*model, /*frozen_backbone=*/true);
  RAdam optimizer(params, RAdamOptions(1e-4));
  XeStepOptions xe;
  xe.pad_id = vocab.pad_id();
  struct EpochTime {
    double wall, cpu;
    int64_t pairs;
  };
  auto run_epoch = [&](bool with_cache, int64_t epoch) {
    LoaderOptions lo;
    lo.batch_size = a.batch;
    lo.workers = a.workers;
    lo.seed = 7;
    ImageSource source;
    if (!with_cache) source = [](const std::string& p) { return load_image_rgb(p); };
    DataLoader loader(dataset, vocab, lo, source);
    LoaderState state;
    state.seed = lo.seed;
    state.epoch = epoch;
    loader.restore(state);
    int64_t batches = loader.batches_per_epoch();
    if (a.max_batches > 0) batches = std::min(batches, a.max_batches);
    int64_t pairs = 0;
    const auto start = BenchClock::now();
    const double cpu_start = process_cpu_seconds();
    for (int64_t b = 0; b < batches; ++b) {
      Batch batch = loader.next();
      model->train();
      model->swin_transf->eval();
      torch::Tensor feats;
      {
        torch::NoGradGuard ng;
        if (with_cache) {
          std::vector<int64_t> rows;
          for (size_t i : batch.image_indices) rows.push_back(row_of_image[i]);
          feats = cache.features(rows).to(device);
        } else {
          feats = model->backbone(images_to_model_input(batch.images, static_cast<int>(config.swin_img_size)).to(device));
        }
      }
      const auto loss = xe_step(*model, feats, batch, xe).loss;
      loss.backward();
      optimizer.step();
      optimizer.zero_grad();
      pairs += static_cast<int64_t>(batch.size());
    }
    return EpochTime{seconds_since(start), process_cpu_seconds() - cpu_start, pairs};
  };
  run_epoch(true, 100);  // warm-up (allocator, page cache) outside the timings
  std::vector<double> with_s, without_s, with_cpu, without_cpu;
  int64_t pairs = 0;
  for (int64_t e = 0; e < a.epochs; ++e) {  // interleaved so machine load hits both alike
    const auto w = run_epoch(true, e);
    const auto wo = run_epoch(false, e);
    with_s.push_back(w.wall);
    without_s.push_back(wo.wall);
    with_cpu.push_back(w.cpu);
    without_cpu.push_back(wo.cpu);
    pairs = w.pairs;
    spdlog::info("epoch {}: with cache {:.2f} s ({:.2f} CPU s), without {:.2f} s ({:.2f} CPU s)", e + 1, w.wall, w.cpu,
                 wo.wall, wo.cpu);
  }
  const double mw = median(with_s), mwo = median(without_s);
  const double cw = median(with_cpu), cwo = median(without_cpu);
  const double speedup = mw > 0 ? mwo / mw : 0;
  // Extraction covers every training image; a capped epoch does not: no break-even then.
  const bool capped = a.max_batches > 0;
  const double break_even = !capped && mwo > mw ? extract_s / (mwo - mw) : 0;
  if (a.json) {
    std::cout << nlohmann::json{{"dataset", dataset.source}, {"model", a.model}, {"train_images", header.rows()},
                                {"pairs_per_epoch", pairs}, {"batch", a.batch}, {"epochs", a.epochs},
                                {"threads", torch_threads()}, {"workers", a.workers}, {"cache_bytes", cache.file_bytes()},
                                {"extract_s", extract_s}, {"epoch_with_cache_s_median", mw},
                                {"epoch_without_cache_s_median", mwo}, {"speedup", speedup},
                                {"epoch_with_cache_cpu_s_median", cw}, {"epoch_without_cache_cpu_s_median", cwo},
                                {"cpu_ratio", cw > 0 ? cwo / cw : 0.0},
                                {"break_even_epochs", capped ? nlohmann::json() : nlohmann::json(break_even)}}
                     .dump()
              << std::endl;
  } else {
    std::cout << std::fixed << std::setprecision(2) << "frozen-backbone XE epoch, model " << a.model << ", " << pairs
              << " pairs of " << header.rows() << " training images, batch " << a.batch << ", " << torch_threads()
              << " threads, " << a.workers << " decode workers, median of " << a.epochs << ":\n"
              << "  with the feature cache:       " << mw << " s (" << pairs / mw << " pairs/s), " << cw << " CPU s\n"
              << "  without (backbone per batch): " << mwo << " s (" << pairs / mwo << " pairs/s), " << cwo << " CPU s\n"
              << "  speedup: " << speedup << "x wall clock, " << (cw > 0 ? cwo / cw : 0.0) << "x CPU time\n"
              << "  one-off extraction: " << extract_s << " s for " << header.rows() << " images ("
              << static_cast<double>(cache.file_bytes()) / 1e6 << " MB)";
    if (capped)
      std::cout << " (epochs capped at " << a.max_batches << " batches: no break-even figure)\n";
    else
      std::cout << ", repaid after " << break_even << " epochs\n";
  }
  if (temporary) fs::remove_all(work);
}

const bool registered_bench = register_command({"bench", 205, [](CLI::App& root) {
  auto* group = command_group(root, "bench", "Benchmarks that print figures (medians)");
  auto [c, a] = add_command<BenchArgs>(
      group, "frozen-epoch", "A frozen-backbone XE epoch with the feature cache vs the backbone run per batch", run_bench);
  c->add_option("--dataset", a->dataset, "Dataset (default: a generated shapes set of --images images)");
  c->add_option("--images", a->images, "Shapes images to generate")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--model", a->model, "shapes-demo, a preset or a config JSON")->capture_default_str();
  c->add_option("--batch", a->batch, "Caption pairs per batch")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--epochs", a->epochs, "Timed epochs per mode (median)")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--max-batches", a->max_batches, "Cap the batches of an epoch (0: whole epoch)")->capture_default_str();
  c->add_option("--workers", a->workers, "Image decoding threads of the loader")->capture_default_str();
  c->add_option("--work", a->work, "Folder for the dataset and cache (default: a temporary folder, removed)");
  c->add_flag("--json", a->json, "Print one compact JSON object");
}});

}  // namespace
}  // namespace expnet::cli
