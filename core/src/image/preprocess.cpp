// ToTensor + Normalize in float32, in torchvision's order of operations:
// x / 255 (float32 division), then (x - mean) / std with mean and std rounded
// to float32 from the double constants (as torch.as_tensor does). A per-channel
// table of the 256 possible results makes this exact and cheap.
#include "expnet/image/preprocess.h"

#include <torch/torch.h>

#include <opencv2/core.hpp>

#include <stdexcept>
#include <string>

#include "expnet/image/pil_resize.h"

namespace expnet {
namespace {

struct NormalizeTable {
  float value[3][256];
  NormalizeTable() {
    for (int c = 0; c < 3; ++c) {
      const float mean = static_cast<float>(kImageNetMean[c]);
      const float std = static_cast<float>(kImageNetStd[c]);
      for (int v = 0; v < 256; ++v) {
        // Separate float32 steps on purpose: no fused or wider intermediate.
        volatile float scaled = static_cast<float>(v) / 255.0f;
        volatile float centred = scaled - mean;
        value[c][v] = centred / std;
      }
    }
  }
};

const NormalizeTable& table() {
  static const NormalizeTable instance;
  return instance;
}

void check_rgb(const cv::Mat& rgb) {
  if (rgb.type() != CV_8UC3 || rgb.empty())
    throw std::invalid_argument("model input: expected a non-empty 8-bit RGB image (CV_8UC3), got type " +
                                std::to_string(rgb.type()));
}

}  // namespace

void normalize_to_chw(const cv::Mat& rgb, float* out) {
  check_rgb(rgb);
  const NormalizeTable& t = table();
  const size_t plane = static_cast<size_t>(rgb.rows) * rgb.cols;
  float* r = out;
  float* g = out + plane;
  float* b = out + 2 * plane;
  for (int y = 0; y < rgb.rows; ++y) {
    const uint8_t* p = rgb.ptr<uint8_t>(y);
    for (int x = 0; x < rgb.cols; ++x, p += 3) {
      *r++ = t.value[0][p[0]];
      *g++ = t.value[1][p[1]];
      *b++ = t.value[2][p[2]];
    }
  }
}

at::Tensor images_to_model_input(const std::vector<cv::Mat>& rgbs, int size) {
  if (size <= 0) throw std::invalid_argument("model input: size must be positive, got " + std::to_string(size));
  torch::Tensor batch = torch::empty({static_cast<int64_t>(rgbs.size()), 3, size, size}, torch::kFloat32);
  float* data = batch.data_ptr<float>();
  const size_t per_image = 3 * static_cast<size_t>(size) * size;
  for (size_t i = 0; i < rgbs.size(); ++i) {
    check_rgb(rgbs[i]);
    normalize_to_chw(pil_bilinear_resize(rgbs[i], size, size), data + i * per_image);
  }
  return batch;
}

at::Tensor image_to_model_input(const cv::Mat& rgb, int size) { return images_to_model_input({rgb}, size); }

}  // namespace expnet
