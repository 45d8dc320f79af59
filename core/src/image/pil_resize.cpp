// Pillow's BILINEAR resize (libImaging/Resample.c, 8 bits per channel),
// re-implemented so that our pixels equal the authors' PIL preprocessing bit
// for bit: one level off on a few pixels can flip a beam-search result.
//
// What must match exactly:
// - the filter: triangle of support 1, stretched by the downscale factor
//   (antialiasing), sampled at pixel centres, weights normalised per output;
// - window bounds: (int)(center -/+ support + 0.5), clamped to the image;
// - weights as 22-bit fixed point (32 - 8 - 2 bits), rounded half away from 0;
// - accumulation in int starting at 1 << 21 (round half up), then >> 22 and
//   clamped to 0..255, horizontal pass first, vertical pass on its uint8 output;
// - a pass is skipped when that axis keeps its size (Pillow copies then).
#include <opencv2/core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "expnet/image/pil_resize.h"

namespace expnet {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

// Integer weights of one axis: output i reads `count[i]` inputs from `first[i]`
// with weights weights[i * ksize + j].
struct AxisWeights {
  int ksize = 0;
  std::vector<int> first, count;
  std::vector<int32_t> weights;
};

double triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

int32_t to_fixed_point(double w) {
  const double scaled = w * static_cast<double>(1 << kPrecisionBits);
  return static_cast<int32_t>(w < 0 ? scaled - 0.5 : scaled + 0.5);
}

AxisWeights bilinear_weights(int in_size, int out_size) {
  // Pillow passes the box edges as C floats; (float)in_size - 0.0f is exact.
  const float in0 = 0.0f, in1 = static_cast<float>(in_size);
  const double scale = static_cast<double>(in1 - in0) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = 1.0 * filter_scale;
  AxisWeights axis;
  axis.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  axis.first.resize(out_size);
  axis.count.resize(out_size);
  axis.weights.assign(static_cast<size_t>(out_size) * axis.ksize, 0);
  std::vector<double> w(axis.ksize);
  const double inverse_scale = 1.0 / filter_scale;
  for (int i = 0; i < out_size; ++i) {
    const double center = in0 + (i + 0.5) * scale;
    // (int) truncates toward zero, as in C: keep the cast, not floor().
    const int lo = std::max(static_cast<int>(center - support + 0.5), 0);
    const int hi = std::min(static_cast<int>(center + support + 0.5), in_size);
    const int n = hi - lo;
    double total = 0.0;
    for (int j = 0; j < n; ++j) {
      w[j] = triangle((j + lo - center + 0.5) * inverse_scale);
      total += w[j];
    }
    int32_t* out = &axis.weights[static_cast<size_t>(i) * axis.ksize];
    for (int j = 0; j < n; ++j) out[j] = to_fixed_point(total != 0.0 ? w[j] / total : w[j]);
    axis.first[i] = lo;
    axis.count[i] = n;
  }
  return axis;
}

inline uint8_t clip8(int32_t accumulator) {
  const int32_t v = accumulator >> kPrecisionBits;
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// Rows [row_begin, row_begin + out.rows) of `in`, resampled along x.
void horizontal_pass(const cv::Mat& in, int row_begin, const AxisWeights& axis, cv::Mat& out) {
  const int out_width = out.cols;
  for (int y = 0; y < out.rows; ++y) {
    const uint8_t* src = in.ptr<uint8_t>(row_begin + y);
    uint8_t* dst = out.ptr<uint8_t>(y);
    for (int x = 0; x < out_width; ++x) {
      const int32_t* k = &axis.weights[static_cast<size_t>(x) * axis.ksize];
      const uint8_t* p = src + 3 * axis.first[x];
      int32_t r = 1 << (kPrecisionBits - 1), g = r, b = r;
      for (int j = 0, n = axis.count[x]; j < n; ++j, p += 3) {
        r += p[0] * k[j];
        g += p[1] * k[j];
        b += p[2] * k[j];
      }
      dst[3 * x + 0] = clip8(r);
      dst[3 * x + 1] = clip8(g);
      dst[3 * x + 2] = clip8(b);
    }
  }
}

// `axis.first` is relative to row 0 of `in`. Rows are contiguous runs of
// width * 3 bytes, so the inner loop vectorises.
void vertical_pass(const cv::Mat& in, const AxisWeights& axis, int first_offset, cv::Mat& out) {
  const int row_len = out.cols * 3;
  std::vector<int32_t> acc(row_len);
  for (int y = 0; y < out.rows; ++y) {
    std::fill(acc.begin(), acc.end(), 1 << (kPrecisionBits - 1));
    const int32_t* k = &axis.weights[static_cast<size_t>(y) * axis.ksize];
    const int first = axis.first[y] - first_offset;
    for (int j = 0, n = axis.count[y]; j < n; ++j) {
      const uint8_t* src = in.ptr<uint8_t>(first + j);
      const int32_t weight = k[j];
      int32_t* a = acc.data();
      for (int i = 0; i < row_len; ++i) a[i] += src[i] * weight;
    }
    uint8_t* dst = out.ptr<uint8_t>(y);
    for (int i = 0; i < row_len; ++i) dst[i] = clip8(acc[i]);
  }
}

}  // namespace

cv::Mat pil_bilinear_resize(const cv::Mat& rgb, int width, int height) {
  if (rgb.type() != CV_8UC3)
    throw std::invalid_argument("pil_bilinear_resize: expected an 8-bit 3-channel image (CV_8UC3), got type " +
                                std::to_string(rgb.type()));
  if (width <= 0 || height <= 0 || rgb.empty())
    throw std::invalid_argument("pil_bilinear_resize: sizes must be positive (asked " + std::to_string(width) + "x" +
                                std::to_string(height) + " from " + std::to_string(rgb.cols) + "x" +
                                std::to_string(rgb.rows) + ")");
  const bool need_horizontal = width != rgb.cols;
  const bool need_vertical = height != rgb.rows;
  if (!need_horizontal && !need_vertical) return rgb.clone();

  const AxisWeights vertical = bilinear_weights(rgb.rows, height);
  // Like Pillow, the horizontal pass only produces the rows the vertical pass reads.
  const int row_first = need_vertical ? vertical.first.front() : 0;
  const int row_last = need_vertical ? vertical.first.back() + vertical.count.back() : rgb.rows;

  cv::Mat stage = rgb;
  int stage_offset = 0;
  if (need_horizontal) {
    const AxisWeights horizontal = bilinear_weights(rgb.cols, width);
    cv::Mat resized(row_last - row_first, width, CV_8UC3);
    horizontal_pass(rgb, row_first, horizontal, resized);
    stage = resized;
    stage_offset = row_first;
  }
  if (!need_vertical) return stage;
  cv::Mat out(height, stage.cols, CV_8UC3);
  vertical_pass(stage, vertical, stage_offset, out);
  return out;
}

}  // namespace expnet
