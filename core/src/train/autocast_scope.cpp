#include "train/autocast_scope.h"

#include <ATen/autocast_mode.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

#include "expnet/model/precision.h"

namespace expnet {

AutocastMode training_autocast(bool cuda_float16, TrainPrecision precision, const torch::Device& device) {
  std::string why;
  const bool bf16 = precision == TrainPrecision::bf16 ||
                    (precision == TrainPrecision::automatic && bf16_is_fast(device.str(), &why));
  if (cuda_float16 && !device.is_cuda())
    throw std::runtime_error("--autocast needs a CUDA device (--device cuda on a CUDA build of LibTorch): it is float16 "
                             "autocast with loss scaling; on the CPU set \"precision\": \"bf16\" in the config instead");
  if (cuda_float16 && precision == TrainPrecision::bf16)
    throw std::runtime_error("--autocast (float16) and \"precision\": \"bf16\" both given: choose one mixed precision");
  if (cuda_float16) return AutocastMode::cuda_float16;
  if (!bf16) return AutocastMode::off;
  // Asked for explicitly on a CPU without bfloat16 products: say how they run (layers.h).
  if (why.empty() && !device.is_cuda() && !bf16_is_fast(device.str()))
    why =
        "this CPU has no bfloat16 products: each runs as a float32 product of bfloat16-rounded operands, the same "
        "arithmetic but slower than fp32";
  spdlog::info("training in bf16: matrix products in bfloat16 with float32 accumulation; master weights, optimizer "
               "state, loss and LayerNorm statistics in float32{}{}",
               why.empty() ? "" : " (", why.empty() ? "" : why + ")");
  return device.is_cuda() ? AutocastMode::cuda_bfloat16 : AutocastMode::cpu_bfloat16;
}

const char* autocast_name(AutocastMode mode) {
  switch (mode) {
    case AutocastMode::off: return "fp32";
    case AutocastMode::cuda_float16: return "float16";
    case AutocastMode::cpu_bfloat16:
    case AutocastMode::cuda_bfloat16: return "bf16";
  }
  return "fp32";
}

AutocastScope::AutocastScope(AutocastMode mode) : mode_(mode) {
  switch (mode_) {
    case AutocastMode::off: return;
    case AutocastMode::cuda_float16:
      at::autocast::set_autocast_gpu_dtype(at::kHalf);
      at::autocast::set_enabled(true);
      break;
    case AutocastMode::cuda_bfloat16:
      at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
      at::autocast::set_enabled(true);
      break;
    case AutocastMode::cpu_bfloat16:
      at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
      at::autocast::set_cpu_enabled(true);
      break;
  }
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (mode_ == AutocastMode::off) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  if (mode_ == AutocastMode::cpu_bfloat16)
    at::autocast::set_cpu_enabled(false);
  else
    at::autocast::set_enabled(false);
}

}  // namespace expnet
