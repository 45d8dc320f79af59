// What the PNAIC training tests share (test_pnaic_*.cpp): the tiny model of
// tiny_train.json, a small teacher vocabulary, a seeded random checkpoint of
// ours, and a PNAIC recipe on a few generated shapes images.
#pragma once

#include <QString>

#include <torch/torch.h>

#include <string>
#include <vector>

#include "expnet/checkpoint/pth_writer.h"
#include "expnet/checkpoint/state_dict.h"
#include "expnet/model/expansion_net.h"
#include "expnet/model/model_config.h"
#include "expnet/text/vocabulary.h"

namespace expnet_test {

inline const char* tiny_model_json() {
  return R"({"swin_img_size": 32, "swin_patch_size": 4, "swin_in_chans": 3, "swin_embed_dim": 16,
    "swin_depths": [1, 1], "swin_num_heads": [1, 2], "swin_window_size": 4, "swin_mlp_ratio": 2.0,
    "swin_qkv_bias": true, "swin_ape": false, "swin_patch_norm": true, "final_swin_dim": 32,
    "d_model": 32, "N_enc": 1, "N_dec": 1, "ff": 64, "num_heads": 2, "num_exp_enc_list": [4, 8],
    "num_exp_dec": 4, "max_seq_len": 22})";
}

// The tiny model; K >= 1 makes it a PNAIC model.
inline expnet::ModelConfig tiny_model(int64_t groups = 0) {
  auto c = expnet::ModelConfig::from_json(tiny_model_json());
  c.pnaic_groups = groups;
  return c;
}

inline expnet::Vocabulary teacher_vocab(const std::string& extra = "") {
  std::vector<std::string> words{"PAD", "SOS", "EOS", "UNK", "a", "red", "blue", "circle", "square", "on", "white"};
  if (!extra.empty()) words.push_back(extra);
  return expnet::Vocabulary(words);
}

// A seeded random model of `config` saved as dir/name with its config and `vocab` inside.
inline std::string save_model(const QString& dir, const std::string& name, const expnet::ModelConfig& config,
                              const expnet::Vocabulary& vocab) {
  torch::manual_seed(5);
  expnet::ExpansionNet model(config, vocab.size());
  expnet::CheckpointMetadata meta;
  meta.config_json = config.to_json();
  meta.vocabulary_json = vocab.to_json();
  const std::string path = dir.toStdString() + "/" + name;
  expnet::save_checkpoint(path, expnet::module_state(*model), meta);
  return path;
}

// A PNAIC recipe (K = 2) on `teacher`: 40 classic shapes images, one pnaic
// stage of 2 epochs x 3 batches; `extra` goes in as more top-level keys
// ("key": value,), `stage_extra` as more stage keys (, "key": value).
inline std::string pnaic_recipe(const std::string& teacher, const std::string& extra = "",
                                const std::string& stage_extra = R"(, "backbone": "frozen", "batch": 4, "dropout": 0.1)") {
  return R"({"name": "tiny-pnaic", "seed": 3, "teacher": ")" + teacher + R"(", "pnaic_groups": 2, )" + extra +
         R"( "dataset": "shapes", "shapes_images": 40, "shapes_style": "classic", "vocab_min_count": 1,
  "validation_images": 4, "validation_max_len": 8, "checkpoint_every": 1, "workers": 1,
  "stages": [{"name": "p", "objective": "pnaic", "lr": 1e-3, "schedule": "fixed", "epochs": 2,
              "max_batches_per_epoch": 3, "deletion": 0.5)" + stage_extra + "}]}";
}

}  // namespace expnet_test
