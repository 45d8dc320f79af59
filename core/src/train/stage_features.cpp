// A frozen stage's feature cache (see stage_features.h).
#include "train/stage_features.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>

#include "expnet/data/dataset.h"
#include "expnet/data/feature_cache.h"
#include "expnet/model/model_config.h"
#include "expnet/train/distributed.h"

namespace fs = std::filesystem;

namespace expnet {
namespace {

// "[A] backbone features 120/3000 images 35.2 img/s ETA 1m22s" on stderr.
std::function<void(int64_t, int64_t)> extraction_progress(const std::string& stage_name) {
  const auto started = std::chrono::steady_clock::now();
  auto first = std::make_shared<int64_t>(-1);  // rows already there when this extraction started (resume)
  return [=](int64_t done, int64_t total) {
    if (*first < 0) *first = done;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const double ips = secs > 0 ? static_cast<double>(done - *first) / secs : 0;
    const int eta = ips > 0 ? static_cast<int>(static_cast<double>(total - done) / ips) : 0;
    std::fprintf(stderr, "\r[%s] backbone features %lld/%lld images %.1f img/s ETA %dm%02ds ", stage_name.c_str(),
                 static_cast<long long>(done), static_cast<long long>(total), ips, eta / 60, eta % 60);
    if (done == total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  };
}

}  // namespace

StageFeatures::StageFeatures(const Dataset& dataset, const ModelConfig& config, ExpansionNet model, c10::Device device,
                             const std::string& out_dir, const std::string& stage_name, ProcessGroup* group,
                             bool progress, const std::string& given_file)
    : given_(!given_file.empty()), device_(device) {
  // Keyed by the backbone weights: stage C's is extracted with the backbone as
  // stage B left it, and a resumed run finds its file.
  FeatureCacheHeader header;
  std::vector<std::string> paths;
  std::vector<size_t> train;
  for (size_t i = 0; i < dataset.images.size(); ++i)
    if (is_training_split(dataset.images[i].split)) {
      train.push_back(i);
      header.ids.push_back(dataset.images[i].cocoid);
      paths.push_back(dataset.image_path(dataset.images[i]));
    }
  header.model_config_hash = feature_config_hash(config);
  header.backbone = backbone_identity(*model->swin_transf);
  header.source = fs::absolute(out_dir).string() + " stage " + stage_name;
  header.dataset = dataset.source;
  header.splits = "train+restval";
  header.image_size = config.swin_img_size;
  header.chunk_rows = 32;
  if (given_) {
    // Any chunk size reads the same rows; everything else must fit.
    path_ = given_file;
    reader_ = std::make_unique<FeatureCacheReader>(path_);
    header.chunk_rows = reader_->header().chunk_rows;
    reader_->require_identity(header);
    if (!group || group->rank() == 0) reader_->verify();
    spdlog::info("stage {}: backbone features of {} images from {}", stage_name, train.size(), path_);
    rows_.assign(dataset.images.size(), -1);
    for (size_t r = 0; r < train.size(); ++r) rows_[train[r]] = static_cast<int64_t>(r);
    return;
  }
  fs::create_directories(out_dir + "/features");
  path_ = out_dir + "/features/backbone-" + header.backbone + ".fcache";
  const bool writer = !group || group->rank() == 0;
  if (!writer) {
    // One writer: rank 0 checks or extracts the file, the others then read it.
    group->wait_flag("features-" + header.backbone, std::chrono::hours(24));
    reader_ = std::make_unique<FeatureCacheReader>(path_);
    reader_->require_identity(header);
  }
  if (!reader_ && fs::exists(path_)) {
    try {
      auto reader = std::make_unique<FeatureCacheReader>(path_);
      reader->require_identity(header);
      reader->verify();
      reader_ = std::move(reader);
    } catch (const std::exception& e) {
      spdlog::warn("{}; extracting the features again", e.what());
      fs::remove(path_);
    }
  }
  if (!reader_) {
    spdlog::info("stage {}: extracting backbone features of {} images into {}", stage_name, train.size(), path_);
    torch::NoGradGuard no_grad;
    model->swin_transf->eval();  // no drop-path: the features of the backbone as it is
    FeatureExtractOptions fo;
    fo.out = path_;
    fo.resume = true;  // an extraction interrupted with the run continues
    if (progress) fo.progress = extraction_progress(stage_name);
    extract_feature_cache(header, paths, [&](const at::Tensor& x) { return model->backbone(x.to(device_)); }, fo);
    reader_ = std::make_unique<FeatureCacheReader>(path_);
    reader_->require_identity(header);
  }
  if (group && writer) group->set_flag("features-" + header.backbone);
  rows_.assign(dataset.images.size(), -1);
  for (size_t r = 0; r < train.size(); ++r) rows_[train[r]] = static_cast<int64_t>(r);
}

StageFeatures::~StageFeatures() = default;

at::Tensor StageFeatures::features(const std::vector<size_t>& image_indices) const {
  std::vector<int64_t> rows;
  for (size_t i : image_indices) {
    const int64_t r = rows_.at(i);
    if (r < 0) throw std::logic_error("feature cache: image without a cache row");
    rows.push_back(r);
  }
  return reader_->features(rows).to(device_);
}

void StageFeatures::close(bool keep, bool deleter) {
  reader_.reset();
  if (!keep && deleter && !given_) fs::remove(path_);
}

}  // namespace expnet
