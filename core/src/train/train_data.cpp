// A training run's data (see train_data.h).
#include "train/train_data.h"

#include <spdlog/spdlog.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>

#include "expnet/data/shapes_dataset.h"
#include "expnet/train/train_config.h"

namespace fs = std::filesystem;

namespace expnet {

TrainData load_train_data(const TrainConfig& config, const std::string& out_dir, bool may_generate) {
  std::string path = config.dataset;
  if (path == "shapes") {
    const std::string dir = out_dir + "/shapes";
    path = dir + "/dataset_coco.json";  // what make-shapes writes
    if (!fs::exists(path) && may_generate) {
      ShapesOptions so;
      so.out_dir = dir;
      so.images = config.shapes_images;
      so.seed = config.shapes_seed;
      so.style = parse_shapes_style(config.shapes_style);
      spdlog::info("generating the shapes dataset ({} images, {} style) into {}", so.images, config.shapes_style, dir);
      path = make_shapes_dataset(so).json_path;
    }
    if (!fs::exists(path) && !may_generate)
      throw std::runtime_error(
          "no shapes set in " + dir + " after rank 0 generated it into its --out: every rank must see rank 0's --out "
          "(one folder on a file system every host shares, docs/distributed.md)");
  }
  if (path.empty()) throw std::runtime_error("training config: 'dataset' is empty; give the dataset file");
  TrainData data;
  data.dataset = load_dataset(path);
  data.vocab = std::make_unique<Vocabulary>(build_vocabulary(data.dataset, config.vocab_min_count).vocabulary);
  std::vector<std::vector<std::vector<std::string>>> refs;
  data.reward_rows.assign(data.dataset.images.size(), SIZE_MAX);
  for (size_t i = 0; i < data.dataset.images.size(); ++i) {
    const auto& img = data.dataset.images[i];
    if (is_training_split(img.split)) {
      data.reward_rows[i] = refs.size();
      refs.emplace_back();
      for (const auto& c : img.captions) refs.back().push_back(c.tokens);
    } else if (img.split == Split::Val && static_cast<int64_t>(data.val_images.size()) < config.validation_images &&
               !img.captions.empty()) {
      data.val_images.push_back(i);
    }
  }
  data.reward = std::make_unique<CiderDReward>(refs);
  data.reward->set_vocabulary(data.vocab->words(), data.vocab->eos_id());
  if (data.val_images.empty())
    throw std::runtime_error("dataset '" + path + "' has no val images with captions to validate on");
  return data;
}

}  // namespace expnet
