// A training run's data (docs/training.md): the dataset (the shapes set is
// generated on first use), the vocabulary of its training captions, the
// CIDEr-D reward over their references (SCST), and the validation images.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "expnet/data/dataset.h"
#include "expnet/metrics/cider_reward.h"
#include "expnet/text/vocabulary.h"

namespace expnet {

struct TrainConfig;

struct TrainData {
  Dataset dataset;
  std::unique_ptr<Vocabulary> vocab;
  std::unique_ptr<CiderDReward> reward;
  std::vector<size_t> reward_rows;  // dataset image -> its row in `reward` (training images only)
  std::vector<size_t> val_images;   // the first validation_images val images with captions
};

// `may_generate`: this process writes a missing shapes set (distributed: rank 0,
// while the others wait). Throws std::runtime_error without validation images.
TrainData load_train_data(const TrainConfig& config, const std::string& out_dir, bool may_generate);

}  // namespace expnet
