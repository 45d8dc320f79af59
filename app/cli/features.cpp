// expnet features extract | info: the backbone feature cache on disk
// (expnet/data/feature_cache.h, docs/datasets.md "Feature cache").
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "bench_stats.h"
#include "command.h"
#include "expnet/checkpoint/pth_file.h"
#include "expnet/checkpoint/state_dict.h"
#include "expnet/checkpoint/pth_writer.h"
#include "expnet/data/dataset.h"
#include "expnet/data/feature_cache.h"
#include "expnet/model/swin.h"
#include "expnet/model/expansion_net.h"
#include "expnet/model/model_config.h"

namespace fs = std::filesystem;

namespace expnet::cli {
namespace {

using Clock = BenchClock;  // bench_stats.h

std::string duration_text(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char text[32];
  if (s >= 3600)
    std::snprintf(text, sizeof text, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  else
    std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
  return text;
}

// Holds a Swin backbone under the name the full model gives it, so a whole
// checkpoint loads into it by name (captioner weights are skipped).
struct BackboneHolderImpl : torch::nn::Module {
  explicit BackboneHolderImpl(const ModelConfig& config) {
    swin_transf = register_module("swin_transf", SwinTransformer(config));
  }
  SwinTransformer swin_transf{nullptr};
};
TORCH_MODULE(BackboneHolder);

// Splits "train+restval", "train,restval", "training" (= train + restval), "val"...
std::vector<Split> parse_splits(const std::string& text) {
  std::vector<Split> out;
  std::string part;
  std::stringstream in(text);
  while (std::getline(in, part, text.find('+') != std::string::npos ? '+' : ',')) {
    if (part == "training") {
      out.push_back(Split::Train);
      out.push_back(Split::Restval);
    } else {
      try {
        out.push_back(parse_split(part));
      } catch (const std::exception&) {
        throw std::runtime_error("--split: unknown split '" + part + "' (use train, restval, val, test, training, or a list like train+restval)");
      }
    }
  }
  if (out.empty()) throw std::runtime_error("--split: give at least one split (e.g. train+restval)");
  return out;
}

// ---------------------------------------------------------------- extract

struct ExtractArgs {
  std::string model, checkpoint, dataset, split = "train+restval", out;
  int64_t batch = 32;
  bool resume = false, json = false, no_progress = false;
};

void run_extract(const RuntimeOptions& runtime, const ExtractArgs& a) {
  apply_runtime(runtime);
  // The model config: --model, else the one stored in our checkpoints.
  std::string config_json;
  if (!a.model.empty()) {
    config_json = resolve_model_config(a.model).to_json();
  } else {
    PthFile file(a.checkpoint);
    const auto meta = read_metadata(file);
    if (!meta.config_json)
      throw std::runtime_error("checkpoint '" + a.checkpoint + "' holds no model config; give --model PRESET|CONFIG.json");
    config_json = ModelConfig::from_json(*meta.config_json, a.checkpoint).to_json();
  }
  const ModelConfig config = ModelConfig::from_json(config_json, "model config");
  BackboneHolder holder(config);
  try {
    LoadOptions lo;
    lo.allow_unexpected = true;  // the captioner's weights
    load_state_dict(*holder, a.checkpoint, lo);
  } catch (const std::exception& whole) {
    // Microsoft's Swin ImageNet checkpoints name the backbone without the prefix.
    try {
      load_swin_backbone(*holder, a.checkpoint);
    } catch (const std::exception&) {
      throw std::runtime_error(std::string(whole.what()) + " (no backbone weights for this --model in the checkpoint)");
    }
  }
  holder->to(torch::Device(current_device()));
  holder->eval();

  const Dataset dataset = load_dataset(a.dataset);
  const auto splits = parse_splits(a.split);
  FeatureCacheHeader header;
  std::vector<std::string> paths;
  for (const auto& image : dataset.images)
    if (std::find(splits.begin(), splits.end(), image.split) != splits.end()) {
      header.ids.push_back(image.cocoid);
      paths.push_back(dataset.image_path(image));
    }
  if (paths.empty()) throw std::runtime_error("dataset '" + dataset.source + "' has no images in split '" + a.split + "'");
  if (a.batch < 1) throw std::runtime_error("--batch must be >= 1");
  header.model_config_hash = feature_config_hash(config);
  header.backbone = backbone_identity(*holder->swin_transf);
  header.source = fs::absolute(a.checkpoint).string();
  header.dataset = dataset.source;
  header.splits = a.split;
  header.image_size = config.swin_img_size;
  header.chunk_rows = a.batch;

  FeatureExtractOptions options;
  options.out = a.out;
  options.resume = a.resume;
  const auto started = Clock::now();
  int64_t start_rows = -1;
  const bool tty = ::isatty(2);
  if (!a.no_progress)
    options.progress = [&](int64_t done, int64_t total) {
      if (start_rows < 0) start_rows = done;
      const double secs = seconds_since(started);
      const double rate = secs > 0 ? static_cast<double>(done - start_rows) / secs : 0;
      const double eta = rate > 0 ? static_cast<double>(total - done) / rate : 0;
      const int width = 30;
      const int filled = static_cast<int>(width * done / std::max<int64_t>(total, 1));
      std::fprintf(stderr, "%s[%s%s] %lld/%lld images  %.1f images/s  ETA %s ", tty ? "\r" : "",
                   std::string(static_cast<size_t>(filled), '#').c_str(),
                   std::string(static_cast<size_t>(width - filled), '.').c_str(), static_cast<long long>(done),
                   static_cast<long long>(total), rate, done == start_rows && done < total ? "--" : duration_text(eta).c_str());
      if (!tty || done == total) std::fprintf(stderr, "\n");
      std::fflush(stderr);
    };
  torch::NoGradGuard no_grad;
  const auto result = extract_feature_cache(
      header, paths, [&](const at::Tensor& x) { return holder->swin_transf(x.to(torch::Device(current_device()))); },
      options);
  FeatureCacheReader done(a.out);
  const auto& h = done.header();
  if (a.json) {
    std::cout << nlohmann::json{{"file", a.out},       {"rows", h.rows()},        {"tokens", h.tokens}, {"dim", h.dim},
                                {"bytes", done.file_bytes()}, {"backbone", h.backbone}, {"resumed_rows", result.resumed_rows},
                                {"computed_rows", result.computed_rows}, {"already_complete", result.already_complete},
                                {"seconds", result.seconds},
                                {"images_per_second", result.seconds > 0 ? result.computed_rows / result.seconds : 0.0}}
                     .dump()
              << std::endl;
  } else if (result.already_complete) {
    std::cout << a.out << " is already complete (" << h.rows() << " images, backbone " << h.backbone << ")\n";
  } else {
    std::cout << std::fixed << std::setprecision(1) << a.out << ": " << h.rows() << " images x " << h.tokens << " x " << h.dim
              << " float16, " << static_cast<double>(done.file_bytes()) / 1e6 << " MB; " << result.computed_rows
              << " computed (" << result.resumed_rows << " resumed) in " << result.seconds << " s, "
              << (result.seconds > 0 ? result.computed_rows / result.seconds : 0.0) << " images/s\n";
  }
}

// ---------------------------------------------------------------- info

void run_info(const std::string& file, bool verify, bool json) {
  const std::string partial = file + ".partial";
  if (!fs::exists(file) && fs::exists(partial)) {
    const int64_t rows = feature_cache_partial_rows(file);
    throw std::runtime_error("feature cache '" + file + "' is not finished: " + std::to_string(std::max<int64_t>(rows, 0)) +
                             " images done in " + partial + "; resume with expnet features extract ... --resume");
  }
  FeatureCacheReader reader(file);
  if (verify) reader.verify();
  const auto& h = reader.header();
  if (json) {
    std::cout << nlohmann::json{{"file", file},       {"format_version", 1},      {"dtype", "float16"},
                                {"rows", h.rows()},   {"tokens", h.tokens},       {"dim", h.dim},
                                {"chunk_rows", h.chunk_rows}, {"image_size", h.image_size}, {"backbone", h.backbone},
                                {"model_config_hash", h.model_config_hash}, {"source", h.source},
                                {"dataset", h.dataset}, {"splits", h.splits}, {"bytes", reader.file_bytes()},
                                {"verified", verify}}
                     .dump()
              << std::endl;
    return;
  }
  std::cout << std::fixed << std::setprecision(1) << "file:          " << file << "\n"
            << "images:        " << h.rows() << " (" << h.splits << " of " << h.dataset << ")\n"
            << "per image:     " << h.tokens << " x " << h.dim << " float16 (input " << h.image_size << " px)\n"
            << "size:          " << static_cast<double>(reader.file_bytes()) / 1e6 << " MB\n"
            << "backbone:      " << h.backbone << " (from " << h.source << ")\n"
            << "model config:  " << h.model_config_hash << "\n"
            << "chunk:         " << h.chunk_rows << " images\n"
            << "checksums:     " << (verify ? "verified" : "not checked (add --verify)") << "\n";
}

const bool registered = register_command({"features", 45, [](CLI::App& root) {
  auto* group = command_group(root, "features", "Backbone feature cache for frozen-backbone training (float16, on disk)");
  {
    auto* c = group->add_subcommand("extract", "Compute every image's backbone features once into a cache file");
    auto runtime = add_runtime_options(c);
    auto a = std::make_shared<ExtractArgs>();
    c->add_option("--model", a->model, "Model preset or config JSON (default: the config stored in the checkpoint)");
    c->add_option("--checkpoint", a->checkpoint, "Checkpoint with the backbone weights (.pth)")->required();
    c->add_option("--dataset", a->dataset, "Dataset file or folder (docs/datasets.md)")->required();
    c->add_option("--split", a->split, "Splits: train, restval, val, test, training, or a list (train+restval)")
        ->capture_default_str();
    c->add_option("--out", a->out, "Cache file to write")->required();
    c->add_option("--batch", a->batch, "Images per backbone batch (and per committed chunk)")->capture_default_str();
    c->add_flag("--resume", a->resume, "Continue an interrupted extraction (OUT.partial)");
    c->add_flag("--no-progress", a->no_progress, "No progress bar on stderr");
    c->add_flag("--json", a->json, "Print one compact JSON object");
    c->callback([runtime, a] { run_extract(*runtime, *a); });
  }
  {
    auto* c = group->add_subcommand("info", "Describe a feature cache file (header, size; --verify checks every chunk)");
    auto runtime = add_runtime_options(c);
    auto file = std::make_shared<std::string>();
    auto verify = std::make_shared<bool>(false);
    auto json = std::make_shared<bool>(false);
    c->add_option("FILE", *file, "Cache file")->required();
    c->add_flag("--verify", *verify, "Recompute every chunk checksum (reads the whole file)");
    c->add_flag("--json", *json, "Print one compact JSON object");
    c->callback([=] {
      apply_runtime(*runtime);
      run_info(*file, *verify, *json);
    });
  }
}});

}  // namespace
}  // namespace expnet::cli
