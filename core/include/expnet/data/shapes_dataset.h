// The built-in demo captioning set: rendered scenes of one to three coloured
// shapes with five true, pairwise different, spatially worded captions each,
// written in Karpathy's format. Deterministic for a seed on every platform:
// std::mt19937_64 (its output is fixed by the standard) with our own integer
// distributions (std::uniform_int_distribution is not portable). See
// docs/datasets.md ("The shapes set").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace expnet {

inline constexpr int kShapesImageSize = 128;  // pixels, square RGB PNG
inline constexpr int kShapesCaptionsPerImage = 5;

struct ShapeItem {
  std::string shape;  // circle, square, triangle, star, diamond
  std::string color;  // red, green, blue, yellow, orange, purple
  std::string size;   // small, medium (no size word in captions), large
  int x = 0, y = 0;   // centre, pixels
  int radius = 0;     // half the extent, pixels
};

struct ShapesScene {
  std::string background;  // white, gray, black
  std::vector<ShapeItem> shapes;
  std::vector<std::string> captions;  // kShapesCaptionsPerImage, pairwise different
  std::vector<int> structures;        // the sentence structure id of each caption
};

// The scene and captions of image `index` of the set made with `seed`.
ShapesScene make_shapes_scene(uint64_t seed, int64_t index);
// Renders a scene (RGB, kShapesImageSize square); the noise comes from the same seed/index.
cv::Mat render_shapes_scene(const ShapesScene& scene, uint64_t seed, int64_t index);
// Number of distinct sentence structures the caption writer has.
int shapes_structure_count();
// Words the captions use for colours and shapes (for checks).
const std::vector<std::string>& shapes_colour_words();
const std::vector<std::string>& shapes_shape_words();

struct ShapesOptions {
  std::string out_dir;
  int64_t images = 1000;
  uint64_t seed = 1;
  int threads = 0;  // 0 = all cores
  double val_fraction = 0.1, test_fraction = 0.1;
};

struct ShapesReport {
  int64_t images = 0, train = 0, val = 0, test = 0;
  int structures_used = 0;
  double seconds = 0;
  std::string json_path;
};

// Writes OUT/dataset_coco.json (atomically, last) and OUT/images/shapes_NNNNNN.png.
// Each image entry also carries "width", "height" and "scene" (the shapes drawn), and
// each sentence its "structure" id. progress(done, total) is called from worker threads.
ShapesReport make_shapes_dataset(const ShapesOptions& options,
                                 const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace expnet
