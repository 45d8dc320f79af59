// See dropout_training.h.
#include "kernels/cpu/dropout_training.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cstdint>
#include <mutex>
#include <stdexcept>

#include "kernels/cpu/vector_math.h"

namespace expnet {
namespace {

// MurmurHash3's 32-bit finaliser: a bijection with full avalanche, in 32-bit
// integer operations that vectorise on AVX2 (64-bit multiplies would not).
inline uint32_t mix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

struct Draw {
  uint32_t seed_lo, seed_hi, threshold;  // keep when the hash is below threshold
  float scale;
};

// Elements [first, last) of a block that starts at element `base` (the hash's
// counter, so a mask does not depend on how the threads split the tensor).
EXPNET_VECTOR_CLONES void draw_and_scale(const Draw& d, int64_t base, int64_t count, const float* x, float* out,
                                         uint8_t* mask) {
  const uint32_t high = d.seed_hi + static_cast<uint32_t>(static_cast<uint64_t>(base) >> 32) * 0x9e3779b9u;
  const auto low = static_cast<uint32_t>(base);
  for (int64_t i = 0; i < count; ++i) {
    const uint32_t h = mix32(mix32((low + static_cast<uint32_t>(i)) ^ d.seed_lo) + high);
    const bool keep = h < d.threshold;
    mask[i] = keep;
    out[i] = keep ? x[i] * d.scale : 0.f;
  }
}

EXPNET_VECTOR_CLONES void apply_mask(const float* grad, const uint8_t* mask, float scale, float* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = mask[i] ? grad[i] * scale : 0.f;
}

// Blocks of 2^15 elements: a block's hash restarts from its own counter.
constexpr int64_t kBlock = int64_t{1} << 15;

struct FusedDropout : torch::autograd::Function<FusedDropout> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x_in, double p) {
    const auto x = x_in.contiguous();
    uint64_t seed = 0;
    {
      auto generator = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(generator.mutex());
      seed = at::check_generator<at::CPUGeneratorImpl>(generator)->random64();
    }
    const double keep = 1.0 - p;
    Draw d{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
           static_cast<uint32_t>(std::min(4294967295.0, keep * 4294967296.0)), static_cast<float>(1.0 / keep)};
    auto out = at::empty_like(x);
    auto mask = at::empty(x.sizes(), x.options().dtype(at::kByte));
    const float* x_data = x.data_ptr<float>();
    float* out_data = out.data_ptr<float>();
    uint8_t* mask_data = mask.data_ptr<uint8_t>();
    const int64_t n = x.numel();
    at::parallel_for(0, (n + kBlock - 1) / kBlock, 1, [&](int64_t first, int64_t last) {
      for (int64_t b = first; b < last; ++b) {
        const int64_t begin = b * kBlock, count = std::min(kBlock, n - begin);
        draw_and_scale(d, begin, count, x_data + begin, out_data + begin, mask_data + begin);
      }
    });
    ctx->save_for_backward({mask});
    ctx->saved_data["scale"] = static_cast<double>(d.scale);
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto mask = ctx->get_saved_variables()[0];
    const auto grad = grads[0].contiguous();
    const auto scale = static_cast<float>(ctx->saved_data["scale"].toDouble());
    auto out = at::empty_like(grad);
    const float* grad_data = grad.data_ptr<float>();
    const uint8_t* mask_data = mask.data_ptr<uint8_t>();
    float* out_data = out.data_ptr<float>();
    const int64_t n = grad.numel();
    at::parallel_for(0, (n + kBlock - 1) / kBlock, 1, [&](int64_t first, int64_t last) {
      for (int64_t b = first; b < last; ++b) {
        const int64_t begin = b * kBlock;
        apply_mask(grad_data + begin, mask_data + begin, scale, out_data + begin, std::min(kBlock, n - begin));
      }
    });
    return {out, at::Tensor()};
  }
};

}  // namespace

bool dropout_training_applies(const at::Tensor& x) {
  return x.defined() && x.device().is_cpu() && x.scalar_type() == at::kFloat;
}

at::Tensor dropout_training(const at::Tensor& x, double p) {
  if (!(p >= 0 && p < 1))
    throw std::invalid_argument("dropout probability must be in [0, 1), not " + std::to_string(p));
  if (p == 0) return x;
  return FusedDropout::apply(x, p);
}

}  // namespace expnet
