// expnet bench image: median times of the preprocessing steps of one image:
// decode (load_image_rgb), Pillow-exact resize, and resize + normalisation to
// the model input tensor. Without FILE it uses a synthetic photo-sized JPEG.
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "bench_stats.h"
#include "command.h"
#include "expnet/image/image_decode.h"
#include "expnet/image/pil_resize.h"
#include "expnet/image/preprocess.h"

namespace expnet::cli {
namespace {

struct BenchOptions {
  std::string file;
  int width = 4032, height = 3024;  // a 12 Mpx phone photo
  int size = 384;
  int repeats = 15;
  bool json = false;
};

// Median wall time after one untimed run (page faults, tables).
double median_ms(int repeats, const std::function<void()>& work) { return median_timing(repeats, work, 1).wall_ms; }

std::vector<uint8_t> synthetic_jpeg(int width, int height) {
  // Smooth shapes plus mild noise: compresses like a photo, not like pure noise.
  cv::Mat image(height, width, CV_8UC3);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      image.at<cv::Vec3b>(y, x) = cv::Vec3b(uchar(x * 255 / width), uchar(y * 255 / height), uchar((x + y) % 256));
  cv::circle(image, {width / 3, height / 2}, height / 4, cv::Scalar(30, 200, 90), cv::FILLED);
  cv::Mat noise(image.size(), CV_8UC3);
  cv::randn(noise, cv::Scalar::all(0), cv::Scalar::all(6));
  image += noise;
  std::vector<uchar> out;
  cv::imencode(".jpg", image, out, {cv::IMWRITE_JPEG_QUALITY, 90});
  return {out.begin(), out.end()};
}

void run(const BenchOptions& options) {
  std::vector<uint8_t> bytes;
  std::string label = options.file;
  if (options.file.empty()) {
    spdlog::info("synthesising a {}x{} JPEG (quality 90)", options.width, options.height);
    bytes = synthetic_jpeg(options.width, options.height);
    label = "synthetic " + std::to_string(options.width) + "x" + std::to_string(options.height) + " JPEG";
  }
  auto decode = [&] { return options.file.empty() ? decode_image_rgb(bytes, label) : load_image_rgb(options.file); };
  const cv::Mat rgb = decode();
  const int s = options.size;
  const double decode_ms = median_ms(options.repeats, [&] { decode(); });
  const double resize_ms = median_ms(options.repeats, [&] { pil_bilinear_resize(rgb, s, s); });
  const double input_ms = median_ms(options.repeats, [&] { image_to_model_input(rgb, s); });
  const double opencv_area_ms = median_ms(options.repeats, [&] {
    cv::Mat out;
    cv::resize(rgb, out, {s, s}, 0, 0, cv::INTER_AREA);
  });
  if (options.json) {
    std::cout << nlohmann::json{{"image", label},        {"width", rgb.cols},         {"height", rgb.rows},
                                {"size", s},             {"repeats", options.repeats}, {"decode_ms", decode_ms},
                                {"resize_ms", resize_ms}, {"model_input_ms", input_ms}, {"opencv_inter_area_ms", opencv_area_ms}}
                     .dump()
              << std::endl;
    return;
  }
  std::cout << label << " (" << rgb.cols << "x" << rgb.rows << "), medians of " << options.repeats << " runs:\n"
            << "  decode to RGB:                 " << decode_ms << " ms\n"
            << "  Pillow-exact resize to " << s << ":    " << resize_ms << " ms\n"
            << "  resize + normalise (tensor):   " << input_ms << " ms\n"
            << "  (cv::resize INTER_AREA, for scale: " << opencv_area_ms << " ms)\n";
}

const bool registered = register_command({"bench-image", 200, [](CLI::App& root) {
  auto [command, options] =
      add_command<BenchOptions>(bench_group(root), "image", "Time image decoding and the model's preprocessing", run);
  command->add_option("file", options->file, "Image file (default: a synthetic photo-sized JPEG)");
  command->add_option("--width", options->width, "Synthetic image width")->capture_default_str();
  command->add_option("--height", options->height, "Synthetic image height")->capture_default_str();
  command->add_option("--size", options->size, "Model input size")->capture_default_str();
  command->add_option("--repeats", options->repeats, "Timed runs per step")->check(CLI::PositiveNumber)->capture_default_str();
  command->add_flag("--json", options->json, "One compact JSON object");
}});

}  // namespace
}  // namespace expnet::cli
