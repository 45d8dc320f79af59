// Autocast around a forward pass of the trainer (and of `expnet bench train`):
// CUDA float16 (--autocast, with loss scaling), or bfloat16 on the CPU or a GPU
// (the config's precision: no loss scaling needed); a no-op when off. Private to
// the train area.
#pragma once

#include <torch/types.h>

#include "expnet/train/train_config.h"

namespace expnet {

enum class AutocastMode { off, cuda_float16, cpu_bfloat16, cuda_bfloat16 };

// The mode for --autocast (`cuda_float16`) and the config's `precision` on
// `device`; logs a bf16 choice. Throws std::runtime_error for --autocast off CUDA,
// or with precision bf16 (one mixed precision at a time).
AutocastMode training_autocast(bool cuda_float16, TrainPrecision precision, const torch::Device& device);
const char* autocast_name(AutocastMode mode);  // "fp32", "float16", "bf16"

class AutocastScope {
 public:
  explicit AutocastScope(AutocastMode mode);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;  // one scope, one nesting level
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  AutocastMode mode_;
};

}  // namespace expnet
