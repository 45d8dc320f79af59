// The stage runner behind `expnet train` (see expnet/train/trainer.h, docs/training.md).
#include "expnet/train/trainer.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <ctime>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <unistd.h>

#include "expnet/system/atomic_file.h"
#include "expnet/checkpoint/state_dict.h"
#include "expnet/checkpoint/pth_writer.h"
#include "expnet/data/data_loader.h"
#include "expnet/data/dataset.h"
#include "expnet/decode/decoder_state.h"
#include "expnet/decode/decoding.h"
#include "expnet/train/distributed.h"
#include "expnet/data/feature_cache.h"
#include "expnet/image/image_decode.h"
#include "expnet/metrics/scorers.h"
#include "expnet/metrics/cider_reward.h"
#include "expnet/model/layers.h"
#include "expnet/model/expansion_net.h"
#include "expnet/model/model_config.h"
#include "expnet/image/preprocess.h"
#include "expnet/train/run_store.h"
#include "expnet/data/shapes_dataset.h"
#include "expnet/train/training.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace expnet {

// ---------------------------------------------------------------- config

namespace {

template <typename T>
void take(const json& j, const char* key, T& value, const std::string& source) {
  if (!j.contains(key)) return;
  try {
    value = j.at(key).get<T>();
  } catch (const std::exception&) {
    throw std::runtime_error(source + ": key '" + key + "' has the wrong type");
  }
}

void check_keys(const json& j, const std::vector<std::string>& known, const std::string& source) {
  for (const auto& item : j.items())
    if (std::find(known.begin(), known.end(), item.key()) == known.end())
      throw std::runtime_error(source + ": unknown key '" + item.key() + "' (see docs/training.md)");
}

StageConfig stage_from_json(const json& j, const std::string& source) {
  if (!j.is_object()) throw std::runtime_error(source + ": every stage must be a JSON object");
  check_keys(j, {"name", "objective", "backbone", "batch", "accumulate", "lr", "schedule", "warmup", "anneal_factor",
                 "anneal_every", "epochs", "clip", "dropout", "drop_path", "max_batches_per_epoch", "batch_unit"}, source);
  StageConfig s;
  std::string backbone = "frozen";
  take(j, "name", s.name, source);
  take(j, "objective", s.objective, source);
  take(j, "backbone", backbone, source);
  take(j, "batch", s.batch, source);
  take(j, "accumulate", s.accumulate, source);
  take(j, "lr", s.lr, source);
  take(j, "schedule", s.schedule, source);
  take(j, "warmup", s.warmup, source);
  take(j, "anneal_factor", s.anneal_factor, source);
  take(j, "anneal_every", s.anneal_every, source);
  take(j, "epochs", s.epochs, source);
  take(j, "clip", s.clip, source);
  take(j, "dropout", s.dropout, source);
  take(j, "drop_path", s.drop_path, source);
  take(j, "max_batches_per_epoch", s.max_batches_per_epoch, source);
  take(j, "batch_unit", s.batch_unit, source);
  if (s.batch_unit != "caption" && s.batch_unit != "image")
    throw std::runtime_error(source + ": batch_unit must be caption or image, not '" + s.batch_unit + "'");
  if (s.objective != "xe" && s.objective != "scst")
    throw std::runtime_error(source + ": objective must be xe or scst, not '" + s.objective + "'");
  if (backbone != "frozen" && backbone != "train")
    throw std::runtime_error(source + ": backbone must be frozen or train, not '" + backbone + "'");
  s.frozen_backbone = backbone == "frozen";
  if (s.batch < 1 || s.accumulate < 1 || s.epochs < 0 || s.lr < 0 || s.anneal_every < 1)
    throw std::runtime_error(source + ": batch, accumulate, anneal_every must be >= 1, epochs and lr >= 0");
  parse_lr_schedule_kind(s.schedule);
  return s;
}

json stage_to_json(const StageConfig& s) {
  return {{"name", s.name},         {"objective", s.objective}, {"backbone", s.frozen_backbone ? "frozen" : "train"},
          {"batch", s.batch},       {"accumulate", s.accumulate}, {"lr", s.lr},
          {"schedule", s.schedule}, {"warmup", s.warmup},     {"anneal_factor", s.anneal_factor},
          {"anneal_every", s.anneal_every}, {"epochs", s.epochs}, {"clip", s.clip},
          {"dropout", s.dropout},   {"drop_path", s.drop_path}, {"max_batches_per_epoch", s.max_batches_per_epoch},
          {"batch_unit", s.batch_unit}};
}

}  // namespace

TrainConfig TrainConfig::from_json(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const std::exception& e) {
    throw std::runtime_error(source + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw std::runtime_error(source + ": the training config must be a JSON object");
  check_keys(j, {"name", "seed", "model", "dataset", "shapes_images", "shapes_seed", "vocab_min_count",
                 "validation_images", "validation_beam", "validation_max_len", "keep_last", "checkpoint_every",
                 "workers", "feature_cache", "init_checkpoint", "stages"}, source);
  TrainConfig c;
  take(j, "name", c.name, source);
  take(j, "seed", c.seed, source);
  take(j, "dataset", c.dataset, source);
  take(j, "shapes_images", c.shapes_images, source);
  take(j, "shapes_seed", c.shapes_seed, source);
  take(j, "vocab_min_count", c.vocab_min_count, source);
  take(j, "validation_images", c.validation_images, source);
  take(j, "validation_beam", c.validation_beam, source);
  take(j, "validation_max_len", c.validation_max_len, source);
  take(j, "keep_last", c.keep_last, source);
  take(j, "checkpoint_every", c.checkpoint_every, source);
  take(j, "workers", c.workers, source);
  take(j, "feature_cache", c.feature_cache, source);
  take(j, "init_checkpoint", c.init_checkpoint, source);
  if (c.feature_cache != "disk" && c.feature_cache != "off")
    throw std::runtime_error(source + ": feature_cache must be disk or off, not '" + c.feature_cache + "'");
  if (!j.contains("model")) throw std::runtime_error(source + ": key 'model' (a preset name or an object) is missing");
  const auto& m = j["model"];
  ModelConfig model = m.is_string() ? resolve_model_config(m.get<std::string>())
                                    : ModelConfig::from_json(m.dump(), source + " model");
  c.model_json = model.to_json();
  if (!j.contains("stages") || !j["stages"].is_array() || j["stages"].empty())
    throw std::runtime_error(source + ": 'stages' must be a non-empty array");
  for (size_t i = 0; i < j["stages"].size(); ++i)
    c.stages.push_back(stage_from_json(j["stages"][i], source + " stage " + std::to_string(i)));
  if (c.keep_last < 1) throw std::runtime_error(source + ": keep_last must be >= 1");
  return c;
}

std::string TrainConfig::to_json() const {
  json j = {{"name", name}, {"seed", seed}, {"model", json::parse(model_json)}, {"dataset", dataset},
            {"shapes_images", shapes_images}, {"shapes_seed", shapes_seed}, {"vocab_min_count", vocab_min_count},
            {"validation_images", validation_images}, {"validation_beam", validation_beam},
            {"validation_max_len", validation_max_len}, {"keep_last", keep_last},
            {"checkpoint_every", checkpoint_every}, {"workers", workers}, {"feature_cache", feature_cache}, {"init_checkpoint", init_checkpoint},
            {"stages", json::array()}};
  for (const auto& s : stages) j["stages"].push_back(stage_to_json(s));
  return j.dump(1);
}

TrainConfig train_preset(const std::string& name) {
  TrainConfig c;
  c.name = name;
  if (name == "paper") {
    c.model_json = official_model_config().to_json();
    c.dataset = "";  // must be given: the COCO Karpathy file
    c.validation_images = 5000;
    auto a = StageConfig{"A", "xe", true, 48, 1, 2e-4, "reference", 10000, 0.8, 2, 8, 0, 0.3, 0.1, 0};
    auto b = StageConfig{"B", "xe", false, 48, 1, 3e-5, "reference", 1, 0.55, 1, 2, 0, 0.3, 0.1, 0};
    auto cc = StageConfig{"C", "scst", true, 48, 1, 1e-4, "reference", 1, 0.8, 1, 9, 0, 0.1, 0.1, 0};
    auto d = StageConfig{"D", "scst", false, 24, 2, 2e-6, "fixed", 0, 1.0, 1, 1, 0, 0.1, 0.1, 0};
    c.stages = {a, b, cc, d};
    return c;
  }
  if (name == "shapes-demo") {
    c.model_json = demo_model_config().to_json();
    c.dataset = "shapes";
    // The built-in demo model (resources/demo, README): about 17 minutes of XE
    // end to end on a 2-core CPU, whole images per batch so the backbone runs
    // once for five captions, then about 6 minutes of SCST on cached features.
    // Shape words come late and stay fragile on foreign scenes until the
    // backbone has seen about 65k images (docs/training.md): 27 epochs, with a
    // slow anneal (x0.8 every 4) that keeps the rate up for them.
    c.shapes_images = 3000;
    c.vocab_min_count = 1;
    c.validation_images = 60;
    auto xe = StageConfig{"xe", "xe", false, 12, 1, 1e-3, "linear", 200, 0.8, 4, 27, 1.0, 0.1, 0.0, 0};
    xe.batch_unit = "image";
    c.stages = {xe, StageConfig{"scst", "scst", true, 16, 1, 1e-4, "fixed", 0, 0.8, 1, 3, 1.0, 0.1, 0.0, 0}};
    return c;
  }
  throw std::runtime_error("unknown training preset '" + name + "' (use paper or shapes-demo, or --config FILE)");
}

std::vector<std::string> train_preset_names() { return {"paper", "shapes-demo"}; }

// ---------------------------------------------------------------- trainer

namespace {

std::atomic<int> g_stop_signal{0};
extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

struct Progress {
  int64_t stage = 0, epoch = 0, position = 0;  // position: next batch in the epoch
  int64_t iteration = 0;                      // micro-batches in this stage (scheduler)
  int64_t global_step = 0;                    // optimizer steps overall
  double best_cider = -1, last_cider = 0;
  double loss_scale = 65536.0;                // autocast: dynamic loss scale
  int64_t scale_good_steps = 0;
  std::vector<std::string> kept;               // checkpoint stems, oldest first
  std::string loader_state;
  json to_json() const {
    return {{"stage", stage},   {"epoch", epoch}, {"position", position}, {"iteration", iteration},
            {"global_step", global_step}, {"best_cider", best_cider}, {"last_cider", last_cider},
            {"kept", kept},     {"loader_state", loader_state}, {"loss_scale", loss_scale},
            {"scale_good_steps", scale_good_steps}};
  }
  static Progress from_json(const json& j) {
    Progress p;
    p.stage = j.at("stage");
    p.epoch = j.at("epoch");
    p.position = j.at("position");
    p.iteration = j.at("iteration");
    p.global_step = j.at("global_step");
    p.best_cider = j.at("best_cider");
    p.last_cider = j.at("last_cider");
    p.kept = j.at("kept").get<std::vector<std::string>>();
    p.loader_state = j.at("loader_state");
    p.loss_scale = j.value("loss_scale", 65536.0);
    p.scale_good_steps = j.value("scale_good_steps", int64_t{0});
    return p;
  }
};

class Trainer {
 public:
  Trainer(const TrainConfig& config, const TrainOptions& options) : config_(config), options_(options) {}
  TrainOutcome run();

 private:
  void prepare_data();
  void build_model();
  torch::Tensor features_for(const std::vector<size_t>& image_indices, const std::vector<cv::Mat>& images,
                             bool frozen);
  void open_feature_cache(const StageConfig& stage);
  void close_feature_cache();
  void run_stage(const StageConfig& stage);
  ValidationRecord validate();
  void save(bool end_of_epoch, bool best);
  bool load_latest();
  std::string ckpt_dir() const { return options_.out_dir + "/checkpoints"; }
  std::vector<torch::Tensor> trainable(bool frozen) const;
  bool rank0() const { return !group_ || group_->rank() == 0; }
  int world() const { return group_ ? group_->size() : 1; }
  void sync_parameters();
  void update_loss_scale(bool finite);
  std::vector<std::vector<int64_t>> gather_captions(const std::vector<std::vector<int64_t>>& mine);
  void draw_progress(const StageConfig& stage, int64_t done, int64_t total, double ips, double loss);

  TrainConfig config_;
  TrainOptions options_;
  torch::Device device_{torch::kCPU};
  ModelConfig model_config_;
  Dataset dataset_;
  std::unique_ptr<Vocabulary> vocab_;
  std::unique_ptr<CiderDReward> reward_;
  std::vector<size_t> reward_index_;  // dataset image -> reward image (training images)
  std::vector<size_t> val_images_;
  ExpansionNet model_{nullptr};
  std::unique_ptr<RAdam> optimizer_;
  std::unique_ptr<RunStore> store_;
  int64_t run_id_ = 0;
  Progress progress_;
  // Frozen stages: backbone features on disk (memory-mapped), row per dataset image.
  std::unique_ptr<FeatureCacheReader> cache_;
  std::string cache_path_;
  std::vector<int64_t> cache_rows_;  // dataset image -> cache row (-1: not in the cache)
  bool interrupted_ = false;
  std::unique_ptr<ProcessGroup> group_;  // distributed runs only
};

// Autocast (CUDA float16) around a forward pass; a no-op when off.
class AutocastScope {
 public:
  explicit AutocastScope(bool on) : on_(on) {
    if (!on_) return;
    at::autocast::set_enabled(true);
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (!on_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_enabled(false);
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool on_;
};

void Trainer::prepare_data() {
  std::string path = config_.dataset;
  if (path == "shapes") {
    const std::string dir = options_.out_dir + "/shapes";
    path = dir + "/dataset_coco.json";  // what make-shapes writes
    if (!fs::exists(path) && rank0()) {
      ShapesOptions so;
      so.out_dir = dir;
      so.images = config_.shapes_images;
      so.seed = config_.shapes_seed;
      spdlog::info("generating the shapes dataset ({} images) into {}", so.images, dir);
      path = make_shapes_dataset(so).json_path;
    }
  }
  if (path.empty()) throw std::runtime_error("training config: 'dataset' is empty; give the dataset file");
  dataset_ = load_dataset(path);
  vocab_ = std::make_unique<Vocabulary>(build_vocabulary(dataset_, config_.vocab_min_count).vocabulary);
  std::vector<std::vector<std::vector<std::string>>> refs;
  reward_index_.assign(dataset_.images.size(), SIZE_MAX);
  for (size_t i = 0; i < dataset_.images.size(); ++i) {
    const auto& img = dataset_.images[i];
    if (is_training_split(img.split)) {
      reward_index_[i] = refs.size();
      refs.emplace_back();
      for (const auto& c : img.captions) refs.back().push_back(c.tokens);
    } else if (img.split == Split::Val && static_cast<int64_t>(val_images_.size()) < config_.validation_images &&
               !img.captions.empty()) {
      val_images_.push_back(i);
    }
  }
  reward_ = std::make_unique<CiderDReward>(refs);
  reward_->set_vocabulary(vocab_->words(), vocab_->eos_id());
  if (val_images_.empty()) throw std::runtime_error("dataset '" + path + "' has no val images with captions to validate on");
}

void Trainer::build_model() {
  model_config_ = ModelConfig::from_json(config_.model_json, "training config model");
  // Seed before construction: the reference initialisation keeps the modules'
  // default (random) 1-D biases, drawn in the constructors.
  torch::manual_seed(config_.seed);
  model_ = ExpansionNet(model_config_, static_cast<int64_t>(vocab_->size()));
  if (!config_.init_checkpoint.empty()) {
    // Fine-tuning (e.g. SCST from an XE run's best.pth): every weight must fit.
    const auto report = load_state_dict(*model_, config_.init_checkpoint);
    spdlog::info("initialised from {} ({} tensors)", config_.init_checkpoint, report.loaded.size());
  }
  model_->to(device_);
}

std::vector<torch::Tensor> Trainer::trainable(bool frozen) const {
  std::vector<torch::Tensor> out;
  for (const auto& item : model_->named_parameters()) {
    const bool backbone = item.key().rfind("swin_transf.", 0) == 0;
    item.value().set_requires_grad(!(frozen && backbone));
    if (!(frozen && backbone)) out.push_back(item.value());
  }
  return out;
}

void Trainer::open_feature_cache(const StageConfig& stage) {
  // The cache is keyed by the backbone weights: stage C's is extracted with
  // the backbone as stage B left it, consecutive frozen stages share one file,
  // and a resumed run finds its file.
  FeatureCacheHeader header;
  std::vector<std::string> paths;
  std::vector<size_t> train;
  for (size_t i = 0; i < dataset_.images.size(); ++i)
    if (is_training_split(dataset_.images[i].split)) {
      train.push_back(i);
      header.ids.push_back(dataset_.images[i].cocoid);
      paths.push_back(dataset_.image_path(dataset_.images[i]));
    }
  const std::string config_text = model_config_.to_json();
  header.model_config_hash = feature_hash_hex(feature_hash(config_text.data(), config_text.size()));
  header.backbone = backbone_identity(*model_->swin_transf);
  header.source = fs::absolute(options_.out_dir).string() + " stage " + stage.name;
  header.dataset = dataset_.source;
  header.splits = "train+restval";
  header.image_size = model_config_.swin_img_size;
  header.chunk_rows = 32;
  fs::create_directories(options_.out_dir + "/features");
  cache_path_ = options_.out_dir + "/features/backbone-" + header.backbone + ".fcache";
  if (!rank0()) {
    // One writer: rank 0 checks or extracts the file, the others then read it.
    group_->wait_flag("features-" + header.backbone, std::chrono::hours(24));
    cache_ = std::make_unique<FeatureCacheReader>(cache_path_);
    cache_->require_identity(header);
  }
  if (!cache_ && fs::exists(cache_path_)) {
    try {
      auto reader = std::make_unique<FeatureCacheReader>(cache_path_);
      reader->require_identity(header);
      reader->verify();
      cache_ = std::move(reader);
    } catch (const std::exception& e) {
      spdlog::warn("{}; extracting the features again", e.what());
      fs::remove(cache_path_);
    }
  }
  if (!cache_) {
    spdlog::info("stage {}: extracting backbone features of {} images into {}", stage.name, train.size(), cache_path_);
    torch::NoGradGuard no_grad;
    model_->swin_transf->eval();  // no drop-path: the features of the backbone as it is
    FeatureExtractOptions fo;
    fo.out = cache_path_;
    fo.resume = true;  // an extraction interrupted with the run continues
    const auto started = std::chrono::steady_clock::now();
    int64_t first = -1;  // rows already there when this extraction started (resume)
    if (options_.progress)
      fo.progress = [&](int64_t done, int64_t total) {
        if (first < 0) first = done;
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        const double ips = secs > 0 ? static_cast<double>(done - first) / secs : 0;
        const int eta = ips > 0 ? static_cast<int>(static_cast<double>(total - done) / ips) : 0;
        std::fprintf(stderr, "\r[%s] backbone features %lld/%lld images %.1f img/s ETA %dm%02ds ", stage.name.c_str(),
                     static_cast<long long>(done), static_cast<long long>(total), ips, eta / 60, eta % 60);
        if (done == total) std::fprintf(stderr, "\n");
        std::fflush(stderr);
      };
    extract_feature_cache(header, paths, [this](const at::Tensor& x) { return model_->backbone(x.to(device_)); }, fo);
    cache_ = std::make_unique<FeatureCacheReader>(cache_path_);
    cache_->require_identity(header);
  }
  if (group_ && rank0()) group_->set_flag("features-" + header.backbone);
  cache_rows_.assign(dataset_.images.size(), -1);
  for (size_t r = 0; r < train.size(); ++r) cache_rows_[train[r]] = static_cast<int64_t>(r);
}

void Trainer::close_feature_cache() {
  // A frozen stage leaves the backbone as it was: the next stage, when frozen
  // too, reads the same file. Otherwise the features are never read again
  // (the backbone will train): free the disk.
  cache_.reset();
  const size_t next = static_cast<size_t>(progress_.stage) + 1;
  const bool next_reuses = next < config_.stages.size() && config_.stages[next].frozen_backbone;
  if (!cache_path_.empty() && !next_reuses && rank0()) fs::remove(cache_path_);
  cache_path_.clear();
}

torch::Tensor Trainer::features_for(const std::vector<size_t>& image_indices, const std::vector<cv::Mat>& images,
                                    bool frozen) {
  if (frozen && cache_) {
    std::vector<int64_t> rows;
    for (size_t i : image_indices) {
      const int64_t r = cache_rows_.at(i);
      if (r < 0) throw std::logic_error("feature cache: image without a cache row");
      rows.push_back(r);
    }
    return cache_->features(rows).to(device_);
  }
  return model_->backbone(images_to_model_input(images, static_cast<int>(model_config_.swin_img_size)).to(device_));
}

class ModelStepDecoder : public StepDecoder {
 public:
  ModelStepDecoder(ExpansionNet model, const torch::Tensor& enc) : state_(std::move(model), enc) {}
  at::Tensor step(const at::Tensor& tokens) override { return state_.step(tokens); }
  void select(const at::Tensor& index) override { state_.reorder(index); }

 private:
  DecoderState state_;
};

std::vector<std::vector<int64_t>> Trainer::gather_captions(const std::vector<std::vector<int64_t>>& mine) {
  // Rank r decoded validation images r, r+N, r+2N, ...: one padded id matrix
  // per rank, gathered and interleaved back into validation order.
  const int n = world();
  const int64_t rows = (static_cast<int64_t>(val_images_.size()) + n - 1) / n;
  const int64_t cols = config_.validation_max_len + 3;
  auto local = torch::full({rows, cols}, -1, torch::kLong);
  for (size_t j = 0; j < mine.size(); ++j)
    for (size_t t = 0; t < mine[j].size() && static_cast<int64_t>(t) < cols; ++t)
      local[static_cast<int64_t>(j)][static_cast<int64_t>(t)] = mine[j][t];
  const auto all = group_->all_gather(local.to(device_));
  std::vector<std::vector<int64_t>> out(val_images_.size());
  for (size_t k = 0; k < val_images_.size(); ++k) {
    const auto row = all[k % static_cast<size_t>(n)][static_cast<int64_t>(k / static_cast<size_t>(n))].to(torch::kCPU);
    for (int64_t t = 0; t < cols && row[t].item<int64_t>() >= 0; ++t) out[k].push_back(row[t].item<int64_t>());
  }
  return out;
}

ValidationRecord Trainer::validate() {
  torch::NoGradGuard no_grad;
  model_->eval();
  EvalSet set;
  std::vector<SampleCaption> samples;
  // Distributed: every rank decodes its share, rank 0 scores them all.
  std::vector<size_t> mine;
  for (size_t k = static_cast<size_t>(group_ ? group_->rank() : 0); k < val_images_.size(); k += static_cast<size_t>(world()))
    mine.push_back(k);
  std::vector<std::vector<int64_t>> decoded;
  const size_t chunk = 16;
  for (size_t b = 0; b < mine.size(); b += chunk) {
    const size_t e = std::min(mine.size(), b + chunk);
    std::vector<cv::Mat> mats;
    for (size_t k = b; k < e; ++k) mats.push_back(load_image_rgb(dataset_.image_path(dataset_.images[val_images_[mine[k]]])));
    const auto feats = model_->backbone(images_to_model_input(mats, static_cast<int>(model_config_.swin_img_size)).to(device_));
    ModelStepDecoder decoder(model_, model_->encode(feats));
    DecodingOptions opt;
    opt.search = SearchKind::Beam;
    opt.beam_size = config_.validation_beam;
    opt.max_length = config_.validation_max_len + 1;  // counts SOS
    opt.return_token_logprobs = false;
    SpecialTokens special;
    special.sos = vocab_->sos_id();
    special.eos = vocab_->eos_id();
    const auto results = decode(decoder, static_cast<int64_t>(e - b), special, opt);
    for (size_t k = b; k < e; ++k) decoded.push_back(results[k - b].hypotheses.front().tokens);
  }
  if (group_) decoded = gather_captions(decoded);
  if (!rank0()) return {};
  {
    for (size_t k = 0; k < val_images_.size(); ++k) {
      const auto& img = dataset_.images[val_images_[k]];
      std::string text;
      for (int64_t id : decoded[k]) {
        if (id == vocab_->sos_id() || id == vocab_->eos_id()) continue;
        text += (text.empty() ? "" : " ") + vocab_->words()[static_cast<size_t>(id)];
      }
      std::vector<std::string> refs;
      for (const auto& c : img.captions) refs.push_back(c.raw);
      set.add_raw(std::to_string(img.cocoid) + "_" + std::to_string(k), text, refs);
      if (samples.size() < 5) samples.push_back({run_id_, progress_.stage, progress_.epoch, img.filename, text, refs[0]});
    }
  }
  ValidationRecord v;
  const auto bleu = compute_bleu(set);
  v.bleu1 = bleu.corpus[0];
  v.bleu2 = bleu.corpus[1];
  v.bleu3 = bleu.corpus[2];
  v.bleu4 = bleu.corpus[3];
  v.rouge_l = compute_rouge_l(set).corpus;
  v.cider_d = compute_cider_d(set).corpus;
  v.run = run_id_;
  v.stage = progress_.stage;
  v.epoch = progress_.epoch;
  v.step = progress_.global_step;
  store_->log_validation(v);
  store_->log_samples(samples);
  return v;
}

void Trainer::save(bool end_of_epoch, bool best) {
  if (!rank0()) return;  // one writer; the others load the same files on --resume
  fs::create_directories(ckpt_dir());
  CheckpointMetadata meta;
  meta.config_json = config_.model_json;
  meta.vocabulary_json = vocab_->to_json();
  const auto state = module_state(*model_);
  if (best) save_checkpoint(ckpt_dir() + "/best.pth", state, meta);
  char stem[96];
  std::snprintf(stem, sizeof stem, "step-%08lld", static_cast<long long>(progress_.global_step));
  const std::string base = ckpt_dir() + "/" + stem;
  save_checkpoint(base + ".pth", state, meta);
  // Resume state: optimizer, RNG, progress (torch archive next to the .pth).
  torch::serialize::OutputArchive archive;
  if (optimizer_) {
    torch::serialize::OutputArchive opt;
    optimizer_->save(opt);
    archive.write("optimizer", opt);
  }
  archive.write("rng", at::detail::getDefaultCPUGenerator().get_state());
  if (progress_.kept.empty() || progress_.kept.back() != stem) progress_.kept.push_back(stem);
  while (static_cast<int64_t>(progress_.kept.size()) > config_.keep_last) {
    fs::remove(ckpt_dir() + "/" + progress_.kept.front() + ".pth");
    fs::remove(ckpt_dir() + "/" + progress_.kept.front() + ".state");
    progress_.kept.erase(progress_.kept.begin());
  }
  archive.write("progress", c10::IValue(progress_.to_json().dump()));
  std::ostringstream bytes;
  archive.save_to(bytes);
  write_file_atomic(base + ".state", bytes.str());
  write_file_atomic(ckpt_dir() + "/latest.json", json{{"checkpoint", std::string(stem)}}.dump() + "\n");
  (void)end_of_epoch;
}

bool Trainer::load_latest() {
  const std::string latest = ckpt_dir() + "/latest.json";
  if (!fs::exists(latest)) return false;
  std::ifstream in(latest);
  const auto stem = json::parse(in).at("checkpoint").get<std::string>();
  load_state_dict(*model_, ckpt_dir() + "/" + stem + ".pth");
  torch::serialize::InputArchive archive;
  archive.load_from(ckpt_dir() + "/" + stem + ".state");
  c10::IValue progress;
  archive.read("progress", progress);
  progress_ = Progress::from_json(json::parse(progress.toStringRef()));
  torch::Tensor rng;
  archive.read("rng", rng);
  at::Generator generator = at::detail::getDefaultCPUGenerator();  // shares the global generator
  generator.set_state(rng);
  torch::serialize::InputArchive opt;
  if (archive.try_read("optimizer", opt)) {
    const auto& stage = config_.stages.at(static_cast<size_t>(progress_.stage));
    optimizer_ = std::make_unique<RAdam>(trainable(stage.frozen_backbone), RAdamOptions(stage.lr));
    optimizer_->load(opt);
  }
  if (store_) store_->truncate_after(run_id_, progress_.global_step);
  spdlog::info("resumed from {} (stage {}, epoch {}, batch {}, step {})", stem, progress_.stage, progress_.epoch,
               progress_.position, progress_.global_step);
  return true;
}

void Trainer::update_loss_scale(bool finite) {
  // Dynamic loss scaling as torch.cuda.amp.GradScaler: halve on overflow (the
  // step was skipped by the finite guard), double after 2000 clean steps.
  if (!finite) {
    progress_.loss_scale = std::max(1.0, progress_.loss_scale / 2);
    progress_.scale_good_steps = 0;
  } else if (++progress_.scale_good_steps >= 2000) {
    progress_.loss_scale *= 2;
    progress_.scale_good_steps = 0;
  }
}

void Trainer::sync_parameters() {
  // Every rank builds and loads the same model; rank 0's copy is made the truth anyway.
  torch::NoGradGuard no_grad;
  for (auto& p : model_->parameters()) {
    auto data = p.data();
    group_->broadcast(data);
  }
  for (auto& b : model_->buffers()) group_->broadcast(b);
}

void Trainer::draw_progress(const StageConfig& stage, int64_t done, int64_t total, double ips, double loss) {
  if (!options_.progress || !rank0()) return;
  const int width = 24;
  const int filled = total > 0 ? static_cast<int>(width * done / total) : 0;
  const double eta = ips > 0 ? (total - done) * static_cast<double>(stage.batch) / ips : 0;
  std::fprintf(stderr, "\r[%s] epoch %lld/%lld [%s%s] %lld/%lld %.1f img/s ETA %dm%02ds loss %.4f CIDEr-D %.3f ",
               stage.name.c_str(), static_cast<long long>(progress_.epoch + 1), static_cast<long long>(stage.epochs),
               std::string(static_cast<size_t>(filled), '#').c_str(), std::string(static_cast<size_t>(width - filled), '.').c_str(),
               static_cast<long long>(done), static_cast<long long>(total), ips, static_cast<int>(eta) / 60,
               static_cast<int>(eta) % 60, loss, progress_.last_cider);
  std::fflush(stderr);
}

void Trainer::run_stage(const StageConfig& stage) {
  const bool scst = stage.objective == "scst";
  LoaderOptions lo;
  lo.mode = scst || stage.batch_unit == "image" ? SamplingMode::ImageWise : SamplingMode::CaptionWise;
  // Distributed: the loader plans global batches of batch x world items and
  // this rank builds its slice, so N ranks of batch b train like one of N*b.
  lo.batch_size = stage.batch * world();
  lo.shard_rank = group_ ? group_->rank() : 0;
  lo.shard_count = world();
  lo.seed = config_.seed + static_cast<uint64_t>(progress_.stage) * 1000003ULL;
  lo.workers = config_.workers;
  lo.max_words = config_.validation_max_len;
  ImageSource source;
  // A stage resumed after its last epoch needs no features.
  const bool use_cache = stage.frozen_backbone && config_.feature_cache == "disk" && progress_.epoch < stage.epochs;
  if (use_cache)
    open_feature_cache(stage);
  else
    source = [](const std::string& path) { return load_image_rgb(path); };
  DataLoader loader(dataset_, *vocab_, lo, source);
  if (!progress_.loader_state.empty()) loader.restore(LoaderState::from_json(progress_.loader_state));
  int64_t per_epoch = loader.batches_per_epoch();
  if (stage.max_batches_per_epoch > 0) per_epoch = std::min(per_epoch, stage.max_batches_per_epoch);
  LrSchedule schedule{parse_lr_schedule_kind(stage.schedule), stage.lr, stage.warmup, stage.anneal_factor,
                      stage.anneal_every, per_epoch, 5e-7};
  const auto params = trainable(stage.frozen_backbone);
  if (!optimizer_) optimizer_ = std::make_unique<RAdam>(params, RAdamOptions(stage.lr));
  DropoutRates rates;
  rates.enc = rates.dec = rates.enc_input = rates.dec_input = rates.other = stage.dropout;
  rates.swin_drop_path = stage.frozen_backbone ? 0.0 : stage.drop_path;
  model_->set_dropout(rates);
  ScstOptions so;
  so.sos_id = vocab_->sos_id();
  so.eos_id = vocab_->eos_id();
  so.pad_id = vocab_->pad_id();
  so.max_len = config_.validation_max_len;

  for (; progress_.epoch < stage.epochs; ++progress_.epoch) {
    auto started = std::chrono::steady_clock::now();
    int64_t images_seen = 0;
    double running_loss = 0;
    while (progress_.position < per_epoch) {
      model_->train();
      if (stage.frozen_backbone) model_->swin_transf->eval();
      std::vector<StepRecord> records;
      double step_loss = 0;
      int64_t step_images = 0;
      // Distributed: dropout/sampling streams differ per rank but stay a pure
      // function of (seed, step, rank), so --resume stays exact.
      if (group_)
        torch::manual_seed(config_.seed * 1000003ULL + static_cast<uint64_t>(progress_.global_step) * 7919ULL +
                           static_cast<uint64_t>(group_->rank()));
      for (int64_t micro = 0; micro < stage.accumulate && progress_.position < per_epoch; ++micro) {
        optimizer_->param_groups()[0].options().set_lr(schedule.rate(progress_.iteration));
        Batch batch = loader.next();
        // XE is normalised by the non-pad target count of the whole (global) batch.
        int64_t local_tokens = 0;
        if (!scst && batch.size() > 0)
          for (size_t k = 0; k < batch.tokens.size(); ++k)
            if (k % static_cast<size_t>(batch.length) != 0 && batch.tokens[k] != vocab_->pad_id()) ++local_tokens;
        double global_tokens = static_cast<double>(local_tokens);
        if (group_ && !scst) {
          auto count = torch::full({1}, static_cast<double>(local_tokens), torch::kDouble);
          group_->all_reduce_sum(count);
          global_tokens = count.item<double>();
        }
        torch::Tensor loss;
        if (batch.size() > 0) {  // the last global batch may leave a rank nothing
          AutocastScope autocast(options_.autocast);
          torch::Tensor feats;
          if (stage.frozen_backbone) {
            torch::NoGradGuard ng;
            feats = features_for(batch.image_indices, batch.images, true);
          } else {
            feats = features_for(batch.image_indices, batch.images, false);
          }
          if (scst) {
            std::vector<size_t> idx;
            for (size_t i : batch.image_indices) idx.push_back(reward_index_.at(i));
            // Gradients are summed over ranks: each contributes its mean / N.
            loss = scst_loss(*model_, feats, idx, *reward_, so).loss / static_cast<double>(world());
          } else {
            const auto tokens = torch::from_blob(batch.tokens.data(),
                                                 {static_cast<int64_t>(batch.caption_items.size()), batch.length}, torch::kLong)
                                    .clone().to(device_);
            const auto input = tokens.narrow(1, 0, batch.length - 1);
            const auto target = tokens.narrow(1, 1, batch.length - 1);
            auto enc = model_->encode(feats);
            // Whole images per item: each image's encoding serves all its captions.
            if (lo.mode == SamplingMode::ImageWise)
              enc = enc.index_select(0, torch::tensor(batch.caption_items, torch::kLong).to(device_));
            const auto lp = model_->decode(enc, input, causal_self_mask(input, vocab_->pad_id())).to(torch::kFloat);
            loss = label_smoothing_loss(lp, target, vocab_->pad_id(), 0.1);
            if (group_ && global_tokens > 0) loss = loss * (static_cast<double>(local_tokens) / global_tokens);
          }
        }
        if (loss.defined()) {
          if (options_.autocast) (loss * progress_.loss_scale).backward();
          else loss.backward();
          step_loss += loss.item<double>();
        }
        step_images += static_cast<int64_t>(batch.size());
        ++progress_.iteration;
        ++progress_.position;
        progress_.loader_state = loader.state().to_json();
      }
      // Distributed: one flattened all-reduce of the gradients, carrying the
      // loss, the image count and the stop request, so all ranks decide alike.
      bool stop = g_stop_signal != 0;
      if (group_) {
        const auto sums = all_reduce_gradients(*group_, params, {step_loss, static_cast<double>(step_images), stop ? 1.0 : 0.0});
        step_loss = sums[0];
        step_images = static_cast<int64_t>(std::llround(sums[1]));
        stop = sums[2] > 0;
      }
      if (options_.autocast) {
        torch::NoGradGuard ng;
        for (auto& p : params)
          if (p.grad().defined()) p.mutable_grad().div_(progress_.loss_scale);
      }
      // NaN/inf guard: the update is skipped (and recorded) when the loss or the gradient is not finite.
      const double max_norm = stage.clip > 0 ? stage.clip : std::numeric_limits<double>::infinity();
      const double grad_norm = torch::nn::utils::clip_grad_norm_(params, max_norm);
      const bool finite = std::isfinite(step_loss) && std::isfinite(grad_norm);
      if (finite) optimizer_->step();
      optimizer_->zero_grad();
      if (options_.autocast) update_loss_scale(finite);
      ++progress_.global_step;
      images_seen += step_images;
      running_loss = step_loss;
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      const double ips = secs > 0 ? images_seen / secs : 0;
      if (store_) store_->log_step({run_id_, progress_.stage, progress_.epoch, progress_.global_step, step_loss,
                        optimizer_->param_groups()[0].options().get_lr(), grad_norm, ips, !finite});
      draw_progress(stage, progress_.position, per_epoch, ips, running_loss);
      if (stop) {
        save(false, false);
        interrupted_ = true;
        return;
      }
      if (config_.checkpoint_every > 0 && progress_.global_step % config_.checkpoint_every == 0 &&
          progress_.position < per_epoch)
        save(false, false);
    }
    if (options_.progress && rank0()) std::fprintf(stderr, "\n");
    const auto v = validate();
    progress_.last_cider = v.cider_d;
    const bool best = v.cider_d > progress_.best_cider;
    if (best) progress_.best_cider = v.cider_d;
    if (rank0()) spdlog::info("stage {} epoch {}: loss {:.4f}, BLEU-1 {:.4f}, BLEU-4 {:.4f}, ROUGE-L {:.4f}, CIDEr-D {:.4f}",
                 stage.name, progress_.epoch + 1, running_loss, v.bleu1, v.bleu4, v.rouge_l, v.cider_d);
    // Skip what is left of a capped epoch so the next epoch starts at its first batch.
    LoaderState next;
    next.seed = lo.seed;
    next.epoch = progress_.epoch + 1;
    next.position = 0;
    loader.restore(next);
    progress_.loader_state = next.to_json();
    progress_.position = 0;
    progress_.epoch += 1;
    save(true, best);
    progress_.epoch -= 1;  // the for loop increments it
  }
  close_feature_cache();
}

TrainOutcome Trainer::run() {
  if (options_.out_dir.empty()) throw std::runtime_error("expnet train: --out DIR is required for a run folder");
  device_ = torch::Device(options_.device);
  const bool cuda = device_.is_cuda();
  if (options_.autocast && !cuda)
    throw std::runtime_error("--autocast needs a CUDA device (--device cuda on a CUDA build of LibTorch): mixed precision "
                             "here is float16 autocast with loss scaling, which LibTorch 1.13 only provides on CUDA; "
                             "train without --autocast on the CPU");
  fs::create_directories(options_.out_dir);
  const auto env = distributed_env_from_environment();
  if (env.active()) {
    if (cuda) device_ = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank));
    const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(options_.dist_timeout_s * 1000));
    group_ = std::make_unique<ProcessGroup>(env, timeout, options_.device);
    if (!rank0()) spdlog::set_level(spdlog::level::warn);  // one voice: rank 0 logs progress
    spdlog::info("distributed: {} ranks ({}), rank 0 writes checkpoints and the run store", env.world_size,
                 cuda ? "NCCL" : "Gloo");
  }
  if (rank0())
    store_ = std::make_unique<RunStore>(options_.store_path.empty() ? options_.out_dir + "/runs.sqlite" : options_.store_path);
  // Rank 0 generates a missing shapes set; the others wait for it (generation can outlast the collective timeout).
  if (group_ && !rank0()) group_->wait_flag("data", std::chrono::hours(1));
  prepare_data();
  if (group_ && rank0()) group_->set_flag("data");
  build_model();
  if (options_.resume) {
    if (store_) {
      const auto existing = store_->find_run_by_name(config_.name);
      if (!existing) throw std::runtime_error("--resume: no run named '" + config_.name + "' in " + store_->path());
      run_id_ = existing->id;
    }
    load_latest();  // no checkpoint yet (killed early): the run starts over under its name
  } else {
    if (fs::exists(ckpt_dir() + "/latest.json"))
      throw std::runtime_error("run folder '" + options_.out_dir + "' already has checkpoints: use --resume or another --out");
    if (store_) {
      run_id_ = store_->create_run(config_.name, config_.to_json(), fs::absolute(options_.out_dir).string());
      for (size_t i = 0; i < config_.stages.size(); ++i)
        store_->add_stage(run_id_, static_cast<int64_t>(i), config_.stages[i].name, stage_to_json(config_.stages[i]).dump());
    }
  }
  if (group_) {
    sync_parameters();
    group_->barrier();  // every rank is ready (and rank 0 made its run) before the first step
  }
  if (store_) store_->set_status(run_id_, "running");
  auto old_int = std::signal(SIGINT, on_stop_signal);
  auto old_term = std::signal(SIGTERM, on_stop_signal);
  for (; progress_.stage < static_cast<int64_t>(config_.stages.size()); ++progress_.stage) {
    run_stage(config_.stages[static_cast<size_t>(progress_.stage)]);
    if (interrupted_) break;
    // The next stage starts fresh: new optimizer, loader and schedule.
    optimizer_.reset();
    progress_.epoch = progress_.position = progress_.iteration = 0;
    progress_.loader_state.clear();
  }
  std::signal(SIGINT, old_int);
  std::signal(SIGTERM, old_term);
  TrainOutcome outcome;
  outcome.status = interrupted_ ? "interrupted" : "finished";
  outcome.last_cider_d = progress_.last_cider;
  outcome.steps = progress_.global_step;
  outcome.rank = group_ ? group_->rank() : 0;
  if (!interrupted_ && rank0()) {
    CheckpointMetadata meta;
    meta.config_json = config_.model_json;
    meta.vocabulary_json = vocab_->to_json();
    outcome.final_checkpoint = options_.out_dir + "/final.pth";
    save_checkpoint(outcome.final_checkpoint, module_state(*model_), meta);
  }
  if (store_) store_->set_status(run_id_, outcome.status);
  if (group_) group_->barrier();  // nobody leaves before rank 0 has written final.pth
  return outcome;
}

}  // namespace

TrainOutcome run_training(const TrainConfig& config, const TrainOptions& options) {
  g_stop_signal = 0;
  Trainer trainer(config, options);
  return trainer.run();
}

// ---------------------------------------------------------------- bench

namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

TrainBenchResult bench_training(const TrainBenchOptions& o) {
  if (o.batch < 1 || o.steps < 1 || o.warmup < 0) throw std::runtime_error("bench train: --batch and --steps must be >= 1, --warmup >= 0");
  const ModelConfig mc = o.model_json.empty() ? calibration_model_config() : ModelConfig::from_json(o.model_json, "bench train model");
  std::string json_path = o.data_dir + "/dataset_coco.json";
  if (!fs::exists(json_path)) {
    ShapesOptions so;
    so.out_dir = o.data_dir;
    so.images = o.shapes_images;
    so.seed = o.seed;
    spdlog::info("generating {} shapes images into {}", so.images, so.out_dir);
    json_path = make_shapes_dataset(so).json_path;
  }
  const Dataset dataset = load_dataset(json_path);
  const Vocabulary vocab = build_vocabulary(dataset, 1).vocabulary;
  torch::manual_seed(static_cast<uint64_t>(o.seed));
  ExpansionNet model(mc, static_cast<int64_t>(vocab.size()));
  DropoutRates rates;
  rates.enc = rates.dec = rates.enc_input = rates.dec_input = rates.other = o.dropout;
  rates.swin_drop_path = o.drop_path;
  model->set_dropout(rates);
  model->train();
  LoaderOptions lo;
  lo.mode = SamplingMode::CaptionWise;
  lo.batch_size = o.batch;
  lo.seed = o.seed;
  lo.workers = o.workers;
  lo.max_words = 20;
  DataLoader loader(dataset, vocab, lo, [](const std::string& path) { return load_image_rgb(path); });
  const auto params = model->parameters();
  RAdam optimizer(params, RAdamOptions(1e-4));

  TrainBenchResult r;
  for (const auto& p : params) r.parameters += p.numel();
  r.batch = o.batch;
  r.steps = o.steps;
  std::vector<double> step, data, backbone, encdec, loss_t, backward, optim, cpu;
  const auto cpu_now_ms = [] {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return 1e3 * static_cast<double>(ts.tv_sec) + 1e-6 * static_cast<double>(ts.tv_nsec);
  };
  using clock = std::chrono::steady_clock;
  const auto ms = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  for (int64_t i = 0; i < o.warmup + o.steps; ++i) {
    const double c0 = cpu_now_ms();
    const auto t0 = clock::now();
    Batch batch = loader.next();
    const auto images = images_to_model_input(batch.images, static_cast<int>(mc.swin_img_size));
    const auto tokens = torch::from_blob(batch.tokens.data(), {static_cast<int64_t>(batch.size()), batch.length}, torch::kLong).clone();
    const auto t1 = clock::now();
    const auto feats = model->backbone(images);
    const auto t2 = clock::now();
    const auto input = tokens.narrow(1, 0, batch.length - 1);
    const auto target = tokens.narrow(1, 1, batch.length - 1);
    const auto lp = model->decode(model->encode(feats), input, causal_self_mask(input, vocab.pad_id()));
    const auto t3 = clock::now();
    const auto loss = label_smoothing_loss(lp, target, vocab.pad_id(), 0.1);
    const auto t4 = clock::now();
    loss.backward();
    const auto t5 = clock::now();
    torch::nn::utils::clip_grad_norm_(params, 1.0);
    optimizer.step();
    optimizer.zero_grad();
    const auto t6 = clock::now();
    const double c6 = cpu_now_ms();
    spdlog::info("step {}{}: {:.0f} ms (CPU {:.0f} ms) (data {:.0f}, backbone fwd {:.0f}, enc+dec fwd {:.0f}, loss {:.0f}, backward {:.0f}, "
                 "optimizer {:.0f}), loss {:.4f}", i + 1, i < o.warmup ? " (warm-up)" : "", ms(t0, t6), c6 - c0, ms(t0, t1),
                 ms(t1, t2), ms(t2, t3), ms(t3, t4), ms(t4, t5), ms(t5, t6), loss.item<double>());
    if (i < o.warmup) continue;
    step.push_back(ms(t0, t6));
    cpu.push_back(c6 - c0);
    data.push_back(ms(t0, t1));
    backbone.push_back(ms(t1, t2));
    encdec.push_back(ms(t2, t3));
    loss_t.push_back(ms(t3, t4));
    backward.push_back(ms(t4, t5));
    optim.push_back(ms(t5, t6));
  }
  r.step_ms = median_of(step);
  r.data_ms = median_of(data);
  r.backbone_fwd_ms = median_of(backbone);
  r.encdec_fwd_ms = median_of(encdec);
  r.loss_ms = median_of(loss_t);
  r.backward_ms = median_of(backward);
  r.optimizer_ms = median_of(optim);
  r.cpu_ms = median_of(cpu);
  r.images_per_cpu_s = r.cpu_ms > 0 ? 1000.0 * static_cast<double>(o.batch) / r.cpu_ms : 0;
  r.images_per_s = r.step_ms > 0 ? 1000.0 * static_cast<double>(o.batch) / r.step_ms : 0;
  return r;
}

}  // namespace expnet
