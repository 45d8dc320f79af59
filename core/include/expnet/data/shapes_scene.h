// The scenes of the built-in demo set: one to three coloured shapes with five
// true, pairwise different, spatially worded captions each. Deterministic for
// a seed: std::mt19937_64 (its output is fixed by the standard) with our own
// integer distributions (std::uniform_int_distribution is not portable). See
// docs/datasets.md ("The shapes set").
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace expnet {

inline constexpr int kShapesImageSize = 128;  // pixels, square RGB PNG
inline constexpr int kShapesCaptionsPerImage = 5;

// classic: the first look (white, gray or black backgrounds, fixed proportions,
// light noise). varied: backgrounds of any hue and brightness (plain, gradients,
// textures), shades of each colour, rotated and reshaped shapes, outlines,
// aliased or anti-aliased edges, blur, noise and JPEG artefacts; a model trained
// on classic learns that style rather than shapes and colours (docs/datasets.md).
enum class ShapesStyle { varied, classic };
ShapesStyle parse_shapes_style(const std::string& name);  // throws std::invalid_argument
const char* shapes_style_name(ShapesStyle style);

struct ShapeItem {
  std::string shape;  // circle, square, triangle, star, diamond
  std::string color;  // red, green, blue, yellow, orange, purple
  std::string size;   // small, medium (no size word in captions), large
  int x = 0, y = 0;   // centre, pixels
  int radius = 0;     // half the extent, pixels
  // varied style only (classic: 0 / 0 / 0 and the colour table's shade)
  double angle = 0;            // rotation, degrees
  double form_a = 0, form_b = 0;  // triangle: corner offsets (deg); diamond: aspect; star: inner ratio
  std::array<int, 3> rgb{};   // the shade drawn
};

struct ShapesBackdrop {
  std::string kind = "plain";        // plain, gradient, texture
  std::array<int, 3> rgb{}, rgb2{};  // gradient: from rgb to rgb2; texture: rgb2 = amplitude, period, pattern
  double direction = 0;              // gradient direction, degrees
};

struct ShapesScene {
  ShapesStyle style = ShapesStyle::varied;
  // The word captions use for the background: white, gray, black (classic);
  // those, dark or light (varied); "" when no single word is true.
  std::string background;
  ShapesBackdrop backdrop;  // varied style
  std::vector<ShapeItem> shapes;
  std::vector<std::string> captions;  // kShapesCaptionsPerImage, pairwise different
  std::vector<int> structures;        // the sentence structure id of each caption
};

// The scene and captions of image `index` of the set made with `seed`.
ShapesScene make_shapes_scene(uint64_t seed, int64_t index, ShapesStyle style = ShapesStyle::varied);
// Number of distinct sentence structures the caption writer has.
int shapes_structure_count();
// Words the captions use for colours and shapes (for checks).
const std::vector<std::string>& shapes_colour_words();
const std::vector<std::string>& shapes_shape_words();

}  // namespace expnet
