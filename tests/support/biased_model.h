// A real tiny model that degenerates the way the demo model did: the tiny
// preset's architecture with seeded random weights, a shapes vocabulary, and a
// vocabulary projection biased towards "red", so that left alone it says
// "red red red ...". What max_word_run (and a checkpoint carrying it) must
// prevent. Tests that include it use LibTorch.
#pragma once

#include <torch/torch.h>

#include <QString>

#include <memory>
#include <optional>
#include <string>

#include "expnet/checkpoint/pth_writer.h"
#include "expnet/checkpoint/state_dict.h"
#include "expnet/decode/captioner.h"
#include "expnet/model/expansion_net.h"
#include "expnet/model/model_config.h"

namespace expnet_test {

inline std::unique_ptr<expnet::Captioner> biasedRedModel(uint64_t seed = 11) {
  expnet::Vocabulary vocab({"PAD", "SOS", "EOS", "UNK", "a", "big", "red", "blue", "circle", "square", "left", "of", "on"});
  auto captioner = expnet::Captioner::create_random(expnet::tiny_model_config(), vocab, "cpu", seed);
  torch::NoGradGuard noGrad;
  captioner->model().vocab_linear->bias[captioner->vocabulary().id("red")] += 6.0;
  return captioner;
}

// The model as a checkpoint of ours, carrying `decoding` (CarriedDecoding JSON) when given.
inline void saveBiasedRedModel(const QString& path, const std::optional<std::string>& decoding) {
  auto captioner = biasedRedModel();
  expnet::CheckpointMetadata meta;
  meta.config_json = captioner->config().to_json();
  meta.vocabulary_json = captioner->vocabulary().to_json();
  meta.decoding_json = decoding;
  expnet::save_checkpoint(path.toStdString(), expnet::module_state(captioner->model()), meta);
}

}  // namespace expnet_test
