// The set-up of a PNAIC training run (docs/training.md, "PNAIC"): the AIC
// teacher the recipe names, the student's model config (the teacher's plus
// pnaic_groups) and vocabulary (the teacher's plus DEL), and the checks that
// turn bad input into a named error before any training starts.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "expnet/decode/captioner.h"
#include "expnet/model/model_config.h"
#include "expnet/text/vocabulary.h"
#include "expnet/train/distillation_targets.h"

namespace expnet {

struct Dataset;
struct TrainConfig;

// A run with a stage of objective pnaic (all its stages must be then).
bool is_pnaic_run(const TrainConfig& config);

struct PnaicRun {
  std::string teacher_path;    // the checkpoint file ("demo" resolved)
  std::string teacher_sha1;  // of that file
  ModelConfig student_config;  // the teacher's with pnaic_groups = K
  Vocabulary student_vocab;    // the teacher's with DEL appended
  std::unique_ptr<Captioner> teacher;
};

// Loads and checks the teacher against the recipe: it must be an AIC
// checkpoint of ours (config and vocabulary inside, no DEL), the recipe's
// "model" (when given) must equal its config but for pnaic_groups, and K >= 1.
// `source` names the recipe in messages. Throws std::runtime_error naming the
// file and the fix.
PnaicRun prepare_pnaic_run(const TrainConfig& config, const std::string& device, const std::string& source);

// A checkpoint a PNAIC run loads into the student (init_checkpoint, or the
// run's own on --resume; `role` says which): a PNAIC checkpoint of the same K
// whose vocabulary has DEL and is the teacher's plus DEL. Throws
// std::runtime_error naming the file and the fix.
void check_student_checkpoint(const std::string& path, const PnaicRun& run, const std::string& role);

// The teacher captioning dataset images (indices into dataset.images) for the
// distillation targets: beam `beam` with the teacher's carried decoding
// options otherwise, at most max_len words, `batch` images per forward pass.
TeacherCaptions teacher_captions(Captioner& teacher, const Dataset& dataset, const std::vector<size_t>& images,
                                 int beam, int max_len, int batch = 16);

}  // namespace expnet
