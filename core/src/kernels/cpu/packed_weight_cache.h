// A linear layer's weight laid out for the CPU decoding kernels' steps of
// several images (core/src/kernels/cpu/few_rows_linear.h): panels of kPanel
// weight rows, each stored input-major (in x kPanel, zero-padded), so a tile
// of input rows x kPanel outputs accumulates whole vectors of outputs from
// broadcast inputs while the panel stays in cache. A layer owns a cache so the
// packing is done once per weight, not per step.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <mutex>

namespace expnet {

struct PackedWeight {
  static constexpr int64_t kPanel = 48;
  const void* source = nullptr;  // the weight it was made from: data, version and shape
  int64_t version = 0, out = 0, in = 0;
  at::Tensor panels;  // ceil(out / kPanel) x in x kPanel, zero-padded
};

// Built on first use and kept until the weight changes (another storage, shape
// or version); safe to share between threads.
class PackedWeightCache {
 public:
  std::shared_ptr<const PackedWeight> get(const at::Tensor& weight);

 private:
  std::mutex mutex_;
  std::shared_ptr<const PackedWeight> packed_;
};

}  // namespace expnet
