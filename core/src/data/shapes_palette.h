// The colours of the shapes set: the classic style's fixed table, and for the
// varied style the shades a person still calls by each name, backgrounds that
// contrast with every shape on them, and the one word (if any) true of a
// background. Private to core/src/data.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "data/seeded_random.h"
#include "expnet/data/shapes_scene.h"

namespace expnet::data {

using Rgb = std::array<int, 3>;

struct NamedColour {
  const char* name;
  Rgb rgb;
};
const std::vector<NamedColour>& classic_shape_colours();
const std::vector<NamedColour>& classic_backgrounds();
const Rgb& classic_colour(const std::vector<NamedColour>& table, const std::string& name);

double uniform(Rng& rng, double lo, double hi);
Rgb hsv_to_rgb(double hue_degrees, double saturation, double value);

// A shade of `colour` (red, green, blue, yellow, orange, purple) from hue,
// saturation and value ranges that do not overlap between names.
Rgb varied_shade(const std::string& colour, Rng& rng);
// A plain, gradient or textured background far enough in colour from every shape.
ShapesBackdrop pick_backdrop(const std::vector<ShapeItem>& shapes, Rng& rng);
// white, gray, black, dark or light when that word is true of the whole backdrop; "" otherwise.
std::string backdrop_word(const ShapesBackdrop& backdrop);

}  // namespace expnet::data
