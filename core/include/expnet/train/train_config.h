// A training run's configuration (docs/training.md, "Config schema"): the run
// and its list of stages (XE or SCST, frozen or end-to-end backbone), and the
// built-in presets. Each schema is one field table (key, type, default, help,
// member): the JSON parser, the serialiser, `expnet train --print-config` and
// the studio's form all read it, so a new key is one edit in train_config.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "expnet/train/lr_schedule.h"

namespace expnet {

// pnaic: PNAIC cross-entropy on the teacher's captions (docs/training.md, "PNAIC").
enum class Objective { xe, scst, pnaic };
// XE: caption = a batch of (image, caption) pairs, every caption once per epoch
// (the reference); image = a batch of images, each with all its captions, so the
// backbone runs once per image (self-critical.pytorch's seq_per_img). SCST is
// always image-wise.
enum class BatchUnit { caption, image };
// Frozen-backbone stages: disk = features extracted once into <out>/features/
// (float16, memory-mapped, expnet/data/feature_cache.h); off = the frozen
// backbone runs on every batch (benchmarks, tests).
enum class FeatureCacheMode { disk, off };
// Training's matrix products: fp32, or bf16 under autocast (float32 accumulation,
// master weights, optimizer state, loss and LayerNorm statistics); automatic = bf16
// where the CPU (AVX512_BF16/AMX) or GPU has it, else fp32 (docs/training.md, "Precision").
enum class TrainPrecision { fp32, bf16, automatic };

// The names the JSON uses ("xe", "caption", "disk"...); to_string(LrScheduleKind)
// is in lr_schedule.h.
std::string to_string(Objective objective);
std::string to_string(BatchUnit unit);
std::string to_string(FeatureCacheMode mode);

struct StageConfig {
  std::string name = "A";
  Objective objective = Objective::xe;
  bool frozen_backbone = true;    // "backbone": "frozen" | "train"
  int64_t batch = 48;             // micro-batch (images for scst, pairs or images for xe)
  int64_t accumulate = 1;         // micro-batches per optimizer step (losses summed)
  double lr = 2e-4;
  LrScheduleKind schedule = LrScheduleKind::reference;
  int64_t warmup = 0;
  double anneal_factor = 1.0;
  int64_t anneal_every = 1;       // epochs
  int64_t epochs = 1;
  double clip = 0;                // max grad norm; 0 = off
  double dropout = 0.3;           // all captioner dropouts
  double drop_path = 0.1;         // Swin drop-path when the backbone trains
  int64_t max_batches_per_epoch = 0;  // 0 = the whole epoch (tests and quick runs)
  BatchUnit batch_unit = BatchUnit::caption;
  // pnaic stages: invalid-group deletion probability p, curriculum start c0.
  double deletion = 0.5;
  double curriculum_c0 = 0.01;

  std::string to_json() const;    // the stage object of the config file
};

struct TrainConfig {
  std::string name = "run";
  uint64_t seed = 1;
  std::string model_json;         // ModelConfig::to_json()
  std::string dataset = "shapes"; // dataset file, or "shapes" (generated into <out>/shapes)
  int64_t shapes_images = 1500;
  uint64_t shapes_seed = 1;
  std::string shapes_style = "varied";  // varied | classic (shapes_scene.h)
  int vocab_min_count = 5;
  int64_t validation_images = 100;
  int validation_beam = 3, validation_max_len = 20;
  int64_t keep_last = 2;
  int64_t checkpoint_every = 0;   // optimizer steps; 0 = end of each epoch only
  int workers = 2;
  double dist_timeout = 300;  // seconds a distributed collective waits for the other ranks
  FeatureCacheMode feature_cache = FeatureCacheMode::disk;
  TrainPrecision precision = TrainPrecision::fp32;
  // Weights to start from instead of the seeded initialisation (a checkpoint of
  // the same model and vocabulary, e.g. an XE run's best.pth); empty = none.
  std::string init_checkpoint;
  // The backbone's weights from this checkpoint (a path, or "demo"; the same
  // swin_* settings), the rest seeded: ablations of the captioner over one
  // trained backbone's frozen features (expnet/train/backbone_init.h); empty = none.
  std::string backbone_checkpoint;
  // Frozen-backbone stages read their features from this cache (written by
  // `expnet features extract --split train+restval` from the same backbone and
  // dataset) instead of extracting their own; empty = extract into <out>/features.
  std::string features;
  // The decoding options every checkpoint of the run carries (CarriedDecoding::to_json(),
  // expnet/decode/carried_decoding.h): "{}" = none.
  std::string decoding_json = "{}";
  // PNAIC runs (stages of objective pnaic): the AIC teacher checkpoint (a path,
  // or "demo"), K (0 = the model's pnaic_groups), whether the decoder starts
  // from the teacher's (else fresh), and the beam of the distillation captions.
  // model_json may then be empty: the model is the teacher's plus K.
  std::string teacher;
  int64_t pnaic_groups = 0;
  bool decoder_from_teacher = false;
  int distillation_beam = 3;
  std::vector<StageConfig> stages;

  static TrainConfig from_json(const std::string& text, const std::string& source);  // strict, named errors
  std::string to_json() const;
};

// "paper", "shapes-demo", "shapes-ablation", "shapes-pnaic-k2", "shapes-pnaic-k5"
TrainConfig train_preset(const std::string& name);
std::vector<std::string> train_preset_names();

// What a form needs to show one key of a schema: its JSON key, the kind of
// value, the default (as the JSON writes it), a one-line help, and for a choice
// the accepted values.
enum class ConfigFieldType { text, integer, real, choice, object, list };
struct ConfigFieldInfo {
  std::string key;
  ConfigFieldType type = ConfigFieldType::text;
  std::string default_json;       // "" when required (model, stages)
  std::string help;
  std::vector<std::string> choices;
};
// The keys of a stage object and of the config object, in the order the docs
// and the studio's form show them.
std::vector<ConfigFieldInfo> stage_config_fields();
std::vector<ConfigFieldInfo> train_config_fields();

}  // namespace expnet
