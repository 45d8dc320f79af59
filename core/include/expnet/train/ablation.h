// `expnet train --ablation FILE.json` (docs/training.md, "Ablations"): variants of
// one base recipe that differ only in the model (and, for seed-noise runs, the
// seed; to compare fp32 with bf16, the precision), each trained as its own run
// with the same data and schedule:
//   {"name": "ablation-shapes",
//    "base": "shapes-ablation" | {a training config},
//    "variants": [{"name": "base-base", "model": {"encoder_layer": "self_attention", ...}},
//                 {"name": "base-base-seed2", "model": {...}, "seed": 2},
//                 {"name": "bf16-seed2", "seed": 2, "precision": "bf16"}, ...]}
// A variant's "model" keys replace the base model's keys one by one.
#pragma once

#include <string>
#include <vector>

#include "expnet/train/train_config.h"

namespace expnet {

struct AblationVariant {
  std::string name;    // as in the file
  TrainConfig config;  // the base with the variant's keys; config.name = "<ablation>-<variant>"
};

struct AblationPlan {
  std::string name;
  std::vector<AblationVariant> variants;
};

// Strict, like TrainConfig::from_json: unknown keys, duplicate or empty variant
// names, a variant key other than name/model/seed/precision, or a variant model
// that does not validate are errors naming the variant and the key.
AblationPlan ablation_from_json(const std::string& text, const std::string& source);
AblationPlan read_ablation(const std::string& path);

}  // namespace expnet
