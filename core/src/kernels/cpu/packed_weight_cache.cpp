#include "kernels/cpu/packed_weight_cache.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace expnet {
namespace {

std::shared_ptr<const PackedWeight> pack_weight(const at::Tensor& weight, int64_t version) {
  constexpr int64_t kPanel = PackedWeight::kPanel;
  const auto w = weight.contiguous();
  auto packed = std::make_shared<PackedWeight>();
  packed->source = weight.data_ptr();
  packed->version = version;
  packed->out = w.size(0);
  packed->in = w.size(1);
  const int64_t in = packed->in, panels = (packed->out + kPanel - 1) / kPanel;
  packed->panels = at::zeros({panels, in, kPanel}, w.options());
  const float* source = w.data_ptr<float>();
  float* panel = packed->panels.data_ptr<float>();
  for (int64_t p = 0; p < panels; ++p, panel += in * kPanel) {
    const int64_t rows = std::min(kPanel, packed->out - p * kPanel);
    for (int64_t j = 0; j < rows; ++j) {
      const float* row = source + (p * kPanel + j) * in;
      for (int64_t k = 0; k < in; ++k) panel[k * kPanel + j] = row[k];
    }
  }
  return packed;
}

}  // namespace

std::shared_ptr<const PackedWeight> PackedWeightCache::get(const at::Tensor& weight) {
  // Inference tensors (made under InferenceMode) have no version counter; the
  // ones packed here are made once and never written.
  const int64_t version = weight.is_inference() ? 0 : weight._version();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!packed_ || packed_->source != weight.data_ptr() || packed_->version != version ||
      packed_->out != weight.size(0) || packed_->in != weight.size(1))
    packed_ = pack_weight(weight, version);
  return packed_;
}

}  // namespace expnet
