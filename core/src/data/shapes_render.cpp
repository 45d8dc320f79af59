// Drawing shapes scenes (see shapes_render.h and docs/datasets.md).
#include "expnet/data/shapes_render.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "data/seeded_random.h"
#include "data/shapes_palette.h"

namespace expnet {
namespace {

constexpr int S = kShapesImageSize;
using data::Rng;
using data::uniform;

// Outline of a shape around (x, y), in 1/16 pixel units (cv::fillPoly shift 4).
// Every outline stays within 1.2 radii of the centre (the layout keeps that clear).
std::vector<cv::Point> outline(const ShapeItem& s, bool varied) {
  std::vector<cv::Point> points;
  const double turn = varied ? s.angle : 0;
  auto add = [&](double angle_deg, double radius) {
    const double a = (angle_deg + turn) * M_PI / 180.0;
    points.emplace_back(static_cast<int>(std::lround((s.x + radius * std::cos(a)) * 16)),
                        static_cast<int>(std::lround((s.y + radius * std::sin(a)) * 16)));
  };
  auto add_xy = [&](double dx, double dy) { add(std::atan2(dy, dx) * 180.0 / M_PI, std::hypot(dx, dy)); };
  const double r = s.radius;
  if (s.shape == "square") {
    for (int k = 0; k < 4; ++k) add(45 + 90 * k, r * 0.85 * std::sqrt(2.0));
  } else if (s.shape == "diamond" && varied) {
    const double half_height = r * 1.2, half_width = half_height / s.form_a;
    add_xy(0, -half_height), add_xy(half_width, 0), add_xy(0, half_height), add_xy(-half_width, 0);
  } else if (s.shape == "diamond") {
    for (int k = 0; k < 4; ++k) add(90 * k, r * 1.15);
  } else if (s.shape == "triangle" && varied) {
    add(-90, r * 1.2), add(30 + s.form_a, r * 1.2), add(150 - s.form_b, r * 1.2);
  } else if (s.shape == "triangle") {
    for (int k = 0; k < 3; ++k) add(-90 + 120 * k, r * 1.2);
  } else if (s.shape == "star") {
    const double inner = varied ? s.form_a * 1.2 : 0.5 / 1.2;
    for (int k = 0; k < 10; ++k) add(-90 + 36 * k, k % 2 ? r * 1.2 * inner : r * 1.2);
  }
  return points;
}

// thickness cv::FILLED fills the shape; a positive one draws its outline.
void draw_shape(cv::Mat& image, const ShapeItem& s, const cv::Scalar& colour, int thickness, int line_type, bool varied) {
  if (s.shape == "circle") {
    cv::circle(image, cv::Point(s.x * 16, s.y * 16), s.radius * 16, colour, thickness, line_type, 4);
    return;
  }
  const std::vector<std::vector<cv::Point>> polygons = {outline(s, varied)};
  if (thickness == cv::FILLED)
    cv::fillPoly(image, polygons, colour, line_type, 4);
  else
    cv::polylines(image, polygons, true, colour, thickness, line_type, 4);
}

// Sensor-like noise, independent per channel (xorshift for speed): uniform in
// [-amplitude, amplitude] for the classic style, near-Gaussian (a sum of four
// uniforms) with the given sigma for the varied one.
void add_noise(cv::Mat& image, uint64_t state, double sigma, bool gaussian) {
  state |= 1;
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (int y = 0; y < S; ++y) {
    auto* p = image.ptr<uchar>(y);
    for (int i = 0; i < S * 3; ++i) {
      int delta;
      if (gaussian) {
        double sum = 0;
        for (int k = 0; k < 4; ++k) sum += static_cast<double>(next() >> 40) / static_cast<double>(1 << 24) - 0.5;
        delta = static_cast<int>(std::lround(sum * sigma * std::sqrt(3.0)));  // var of the sum of 4 U(-.5,.5) = 1/3
      } else {
        delta = static_cast<int>(next() % 13) - 6;
      }
      p[i] = cv::saturate_cast<uchar>(static_cast<int>(p[i]) + delta);
    }
  }
}

cv::Mat classic_image(const ShapesScene& scene, Rng& rng) {
  const data::Rgb& bg = data::classic_colour(data::classic_backgrounds(), scene.background);
  int base[3] = {bg[0] + rng.range(-8, 8), bg[1] + rng.range(-8, 8), bg[2] + rng.range(-8, 8)};
  // A gentle linear gradient in a random direction, up to +-16 levels.
  const int gx = rng.range(-16, 16), gy = rng.range(-16, 16);
  cv::Mat image(S, S, CV_8UC3);
  for (int y = 0; y < S; ++y) {
    auto* row = image.ptr<cv::Vec3b>(y);
    for (int x = 0; x < S; ++x) {
      const int shift = (gx * (2 * x - S) + gy * (2 * y - S)) / S;
      for (int c = 0; c < 3; ++c) row[x][c] = cv::saturate_cast<uchar>(base[c] + shift);
    }
  }
  for (const auto& s : scene.shapes) {
    const data::Rgb& colour = data::classic_colour(data::classic_shape_colours(), s.color);
    const cv::Scalar fill(std::clamp(colour[0] + rng.range(-12, 12), 0, 255), std::clamp(colour[1] + rng.range(-12, 12), 0, 255),
                          std::clamp(colour[2] + rng.range(-12, 12), 0, 255));
    draw_shape(image, s, fill, cv::FILLED, cv::LINE_AA, false);
  }
  add_noise(image, rng.next(), 0, false);
  return image;
}

// The backdrop: plain, a linear gradient, or a luminance texture (soft blobs,
// stripes or a checkerboard) over a plain colour.
cv::Mat backdrop_image(const ShapesBackdrop& b, Rng& rng) {
  cv::Mat image(S, S, CV_8UC3);
  if (b.kind == "texture") {
    const int amplitude = b.rgb2[0], period = b.rgb2[1], pattern = b.rgb2[2];
    cv::Mat field(S, S, CV_32F);
    if (pattern == 0) {
      cv::Mat coarse(rng.range(3, 8), rng.range(3, 8), CV_32F);
      for (int y = 0; y < coarse.rows; ++y)
        for (int x = 0; x < coarse.cols; ++x) coarse.at<float>(y, x) = static_cast<float>(uniform(rng, -1, 1));
      cv::resize(coarse, field, cv::Size(S, S), 0, 0, cv::INTER_CUBIC);
    } else {
      const double theta = uniform(rng, 0, M_PI), phase = uniform(rng, 0, 2 * M_PI);
      for (int y = 0; y < S; ++y)
        for (int x = 0; x < S; ++x) {
          const double u = x * std::cos(theta) + y * std::sin(theta), v = -x * std::sin(theta) + y * std::cos(theta);
          const double a = std::sin(2 * M_PI * u / period + phase);
          field.at<float>(y, x) = static_cast<float>(pattern == 1 ? a : (a * std::sin(2 * M_PI * v / period) > 0 ? 1 : -1));
        }
    }
    for (int y = 0; y < S; ++y)
      for (int x = 0; x < S; ++x)
        for (int c = 0; c < 3; ++c)
          image.at<cv::Vec3b>(y, x)[c] = cv::saturate_cast<uchar>(b.rgb[static_cast<size_t>(c)] + amplitude * field.at<float>(y, x));
    return image;
  }
  const double dx = std::cos(b.direction * M_PI / 180.0), dy = std::sin(b.direction * M_PI / 180.0);
  for (int y = 0; y < S; ++y) {
    auto* row = image.ptr<cv::Vec3b>(y);
    for (int x = 0; x < S; ++x) {
      const double t = b.kind == "gradient" ? std::clamp(((x - S / 2.0) * dx + (y - S / 2.0) * dy) / S + 0.5, 0.0, 1.0) : 0.0;
      for (size_t c = 0; c < 3; ++c) row[x][static_cast<int>(c)] = cv::saturate_cast<uchar>(b.rgb[c] + t * (b.rgb2[c] - b.rgb[c]));
    }
  }
  return image;
}

cv::Mat varied_image(const ShapesScene& scene, Rng& rng) {
  cv::Mat image = backdrop_image(scene.backdrop, rng);
  const int line_type = rng.chance(60) ? cv::LINE_AA : cv::LINE_8;
  for (const auto& s : scene.shapes) {
    const cv::Scalar fill(s.rgb[0], s.rgb[1], s.rgb[2]);
    draw_shape(image, s, fill, cv::FILLED, line_type, true);
    if (rng.chance(20)) {  // a darker rim of the same colour, 1-2 px
      const cv::Scalar rim(s.rgb[0] * 0.55, s.rgb[1] * 0.55, s.rgb[2] * 0.55);
      draw_shape(image, s, rim, rng.range(1, 2), line_type, true);
    }
  }
  if (rng.chance(35)) {
    const double sigma = uniform(rng, 0.4, 1.2);
    cv::GaussianBlur(image, image, cv::Size(0, 0), sigma);
  }
  const uint64_t noise_state = rng.next();
  if (rng.chance(70)) add_noise(image, noise_state, uniform(rng, 1, 9), true);
  if (rng.chance(35)) {  // JPEG artefacts, kept in the pixels (the file stays PNG)
    const int quality = rng.range(25, 85);
    std::vector<uchar> bytes;
    cv::Mat bgr;
    cv::cvtColor(image, bgr, cv::COLOR_RGB2BGR);
    cv::imencode(".jpg", bgr, bytes, {cv::IMWRITE_JPEG_QUALITY, quality});
    cv::cvtColor(cv::imdecode(bytes, cv::IMREAD_COLOR), image, cv::COLOR_BGR2RGB);
  }
  return image;
}

}  // namespace

cv::Mat render_shapes_scene(const ShapesScene& scene, uint64_t seed, int64_t index) {
  Rng rng(data::mix_seed(seed, static_cast<uint64_t>(index), 2));
  return scene.style == ShapesStyle::classic ? classic_image(scene, rng) : varied_image(scene, rng);  // RGB
}

}  // namespace expnet
