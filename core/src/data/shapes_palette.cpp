// Colours of the shapes set (see shapes_palette.h).
#include "data/shapes_palette.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace expnet::data {
namespace {

struct ShadeRange {
  const char* name;
  double hue_lo, hue_hi, sat_lo, sat_hi, val_lo, val_hi;
};
// Hue bands with gaps between names, so no shade is half one and half another:
// red 350-8, orange 22-34, yellow 48-62, green 95-150, blue 205-242, purple 264-288 (further reads as pink).
const std::vector<ShadeRange> kShades = {
    {"red", -10, 8, 0.70, 1.0, 0.50, 1.0},     {"orange", 22, 34, 0.80, 1.0, 0.85, 1.0},
    {"yellow", 48, 62, 0.65, 1.0, 0.82, 1.0},  {"green", 95, 150, 0.55, 1.0, 0.40, 1.0},
    {"blue", 205, 242, 0.60, 1.0, 0.45, 1.0},  {"purple", 264, 288, 0.45, 0.85, 0.40, 0.80}};

// Colour distance weighted by the mean red level ("redmean"): cheap and close
// enough to perceived difference for keeping shapes visible.
double distance(const Rgb& a, const Rgb& b) {
  const double rm = (a[0] + b[0]) / 2.0, dr = a[0] - b[0], dg = a[1] - b[1], db = a[2] - b[2];
  return std::sqrt((2 + rm / 256) * dr * dr + 4 * dg * dg + (2 + (255 - rm) / 256) * db * db);
}
constexpr double kMinContrast = 140;

void to_hsv(const Rgb& c, double& h, double& s, double& v) {
  const double r = c[0] / 255.0, g = c[1] / 255.0, b = c[2] / 255.0;
  const double mx = std::max({r, g, b}), mn = std::min({r, g, b}), d = mx - mn;
  v = mx;
  s = mx > 0 ? d / mx : 0;
  h = d == 0 ? 0 : mx == r ? 60 * std::fmod((g - b) / d + 6, 6) : mx == g ? 60 * ((b - r) / d + 2) : 60 * ((r - g) / d + 4);
}

std::string word_of(const Rgb& c) {
  double h, s, v;
  to_hsv(c, h, s, v);
  if (v < 0.16) return "black";
  if (s < 0.12 && v > 0.85) return "white";
  if (s < 0.12 && v > 0.3 && v < 0.75) return "gray";
  if (v < 0.35) return "dark";
  if (v > 0.8 && s < 0.35) return "light";
  return "";
}

}  // namespace

const std::vector<NamedColour>& classic_shape_colours() {
  static const std::vector<NamedColour> table = {{"red", {215, 45, 45}},    {"green", {45, 165, 65}},  {"blue", {45, 85, 215}},
                                                 {"yellow", {235, 205, 45}}, {"orange", {240, 135, 35}}, {"purple", {140, 65, 175}}};
  return table;
}

const std::vector<NamedColour>& classic_backgrounds() {
  static const std::vector<NamedColour> table = {{"white", {242, 242, 242}}, {"gray", {128, 128, 128}}, {"black", {26, 26, 26}}};
  return table;
}

const Rgb& classic_colour(const std::vector<NamedColour>& table, const std::string& name) {
  for (const auto& c : table)
    if (name == c.name) return c.rgb;
  throw std::logic_error("unknown colour " + name);
}

double uniform(Rng& rng, double lo, double hi) { return lo + (hi - lo) * static_cast<double>(rng.next() >> 11) * 0x1.0p-53; }

Rgb hsv_to_rgb(double hue, double s, double v) {
  hue = std::fmod(std::fmod(hue, 360.0) + 360.0, 360.0);
  const double c = v * s, x = c * (1 - std::fabs(std::fmod(hue / 60.0, 2.0) - 1)), m = v - c;
  const int sector = static_cast<int>(hue / 60.0) % 6;
  const double rgb[6][3] = {{c, x, 0}, {x, c, 0}, {0, c, x}, {0, x, c}, {x, 0, c}, {c, 0, x}};
  Rgb out;
  for (int i = 0; i < 3; ++i) out[static_cast<size_t>(i)] = static_cast<int>(std::lround((rgb[sector][i] + m) * 255));
  return out;
}

Rgb varied_shade(const std::string& colour, Rng& rng) {
  for (const auto& r : kShades)
    if (colour == r.name)
      return hsv_to_rgb(uniform(rng, r.hue_lo, r.hue_hi), uniform(rng, r.sat_lo, r.sat_hi), uniform(rng, r.val_lo, r.val_hi));
  throw std::logic_error("unknown colour " + colour);
}

ShapesBackdrop pick_backdrop(const std::vector<ShapeItem>& shapes, Rng& rng) {
  ShapesBackdrop b;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int kind = static_cast<int>(rng.below(100));
    b.kind = kind < 40 ? "plain" : kind < 75 ? "gradient" : "texture";
    const double hue = uniform(rng, 0, 360);
    const double sat = rng.chance(45) ? uniform(rng, 0, 0.12) : uniform(rng, 0.12, 0.85);
    const double val = uniform(rng, 0.03, 1.0);
    b.rgb = hsv_to_rgb(hue, sat, val);
    b.rgb2 = b.rgb;
    b.direction = 0;
    double margin = 0;
    if (b.kind == "gradient") {
      b.rgb2 = hsv_to_rgb(hue + uniform(rng, -50, 50), std::clamp(sat + uniform(rng, -0.2, 0.2), 0.0, 1.0),
                          std::clamp(val + uniform(rng, -0.45, 0.45), 0.02, 1.0));
      b.direction = uniform(rng, 0, 360);
    } else if (b.kind == "texture") {
      b.rgb2 = {rng.range(8, 36), rng.range(6, 32), rng.range(0, 2)};  // amplitude, period, pattern
      margin = 3.0 * b.rgb2[0];
    }
    const Rgb middle = {(b.rgb[0] + b.rgb2[0]) / 2, (b.rgb[1] + b.rgb2[1]) / 2, (b.rgb[2] + b.rgb2[2]) / 2};
    bool visible = true;
    for (const auto& s : shapes) {
      visible = visible && distance(s.rgb, b.rgb) >= kMinContrast + margin;
      if (b.kind == "gradient") visible = visible && distance(s.rgb, b.rgb2) >= kMinContrast && distance(s.rgb, middle) >= kMinContrast;
    }
    if (visible) return b;
  }
  // Practically never reached: the neutral backdrop farthest from every shape.
  b = ShapesBackdrop{};
  double best = -1;
  for (const auto& c : classic_backgrounds()) {
    double worst = 1e9;
    for (const auto& s : shapes) worst = std::min(worst, distance(s.rgb, c.rgb));
    if (worst > best) best = worst, b.rgb = b.rgb2 = c.rgb;
  }
  return b;
}

std::string backdrop_word(const ShapesBackdrop& b) {
  const std::string first = word_of(b.rgb);
  if (b.kind == "gradient") return word_of(b.rgb2) == first ? first : std::string();
  if (b.kind == "texture") return first == "white" || first == "gray" || first == "black" ? std::string() : first;
  return first;
}

}  // namespace expnet::data
