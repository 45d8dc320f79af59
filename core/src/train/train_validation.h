// Validation after every epoch (docs/training.md): beam search over the run's
// validation images, sharded over the ranks (rank r decodes images r, r+N, ...)
// and gathered, then scored on rank 0 (BLEU-1..4, ROUGE-L, CIDEr-D) with a few
// sample captions for the run store.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <vector>

#include "expnet/model/expansion_net.h"
#include "expnet/train/run_store.h"

namespace expnet {

class ProcessGroup;
class Vocabulary;
struct Dataset;

struct ValidationOptions {
  int beam = 3;
  int max_len = 20;      // words, SOS not counted
  int image_size = 224;  // the backbone's input
  c10::Device device{c10::DeviceType::CPU};
};

struct ValidationResult {
  ValidationRecord scores;             // run, stage, epoch, step: the caller's to fill
  std::vector<SampleCaption> samples;  // the first 5 images (run, stage, epoch: the caller's)
};

// Rank 0 (or the only process) gets the scores; the other ranks get zeros.
ValidationResult validate_captions(ExpansionNet model, const Dataset& dataset, const std::vector<size_t>& images,
                                   const Vocabulary& vocab, const ValidationOptions& options, ProcessGroup* group);

}  // namespace expnet
