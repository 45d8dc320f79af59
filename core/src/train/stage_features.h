// A frozen-backbone stage's backbone features on disk (docs/training.md): every
// training image's features extracted once into
// <out>/features/backbone-<backbone identity>.fcache (float16, memory-mapped,
// expnet/data/feature_cache.h), checked and reused on --resume, and shared by
// consecutive frozen stages (same backbone, same file).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "expnet/model/expansion_net.h"

namespace expnet {

class FeatureCacheReader;
class ProcessGroup;
struct Dataset;
struct ModelConfig;

class StageFeatures {
 public:
  // Checks the file of the backbone as it is now, or extracts it (continuing an
  // interrupted extraction). Distributed: rank 0 does that, the others wait and read it.
  // given_file: a cache from `expnet features extract` to read instead (TrainConfig::features;
  // "" = extract): it must fit this backbone and these images, and is never written or deleted.
  StageFeatures(const Dataset& dataset, const ModelConfig& config, ExpansionNet model, c10::Device device,
                const std::string& out_dir, const std::string& stage_name, ProcessGroup* group, bool progress,
                const std::string& given_file = "");
  ~StageFeatures();
  StageFeatures(const StageFeatures&) = delete;
  StageFeatures& operator=(const StageFeatures&) = delete;

  // The cached features of these dataset images (training images), on the device.
  at::Tensor features(const std::vector<size_t>& image_indices) const;
  // Closes the file and deletes it unless the next stage reads it (`keep`) or it was given.
  // One deleter: rank 0, or the only process.
  void close(bool keep, bool deleter);

 private:
  std::unique_ptr<FeatureCacheReader> reader_;
  std::string path_;
  bool given_ = false;         // path_ is TrainConfig::features: read only, never deleted
  std::vector<int64_t> rows_;  // dataset image -> cache row (-1: not a training image)
  c10::Device device_;
};

}  // namespace expnet
