// Pillow's BILINEAR resize, bit-exactly. No LibTorch.
#pragma once

#include <opencv2/core/mat.hpp>

namespace expnet {

// Pillow's Image.resize((width, height), Image.BILINEAR) for 8-bit RGB
// (CV_8UC3), bit-exact: antialiased triangle filter, 22-bit fixed-point
// coefficients, horizontal then vertical pass with uint8 rounding in between.
// Throws std::invalid_argument for another type or a non-positive size.
cv::Mat pil_bilinear_resize(const cv::Mat& rgb, int width, int height);

}  // namespace expnet
