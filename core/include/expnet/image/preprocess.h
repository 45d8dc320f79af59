// Image -> model input, exactly as the authors' demo preprocessing:
// PIL BILINEAR resize to size x size (aspect ratio ignored), ToTensor (/255),
// Normalize with the ImageNet mean and std, all in float32.
#pragma once

#include <ATen/Tensor.h>
#include <opencv2/core/mat.hpp>

#include <array>
#include <vector>

namespace expnet {

inline constexpr std::array<double, 3> kImageNetMean{0.485, 0.456, 0.406};
inline constexpr std::array<double, 3> kImageNetStd{0.229, 0.224, 0.225};

// rgb: CV_8UC3 in RGB order (load_image_rgb). Returns a 1x3xSxS float32 CPU tensor.
at::Tensor image_to_model_input(const cv::Mat& rgb, int size);

// N images -> Nx3xSxS float32 CPU tensor (resize done per image).
at::Tensor images_to_model_input(const std::vector<cv::Mat>& rgbs, int size);

// An already size x size CV_8UC3 RGB image -> 3*S*S floats (CHW) at `out`.
// For loaders that fill a pinned batch buffer themselves.
void normalize_to_chw(const cv::Mat& rgb_resized, float* out);

}  // namespace expnet
