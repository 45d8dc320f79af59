// Drawing a shapes scene (shapes_scene.h) into pixels, in its style.
#pragma once

#include <cstdint>

#include <opencv2/core.hpp>

#include "expnet/data/shapes_scene.h"

namespace expnet {

// RGB, kShapesImageSize square; noise and artefacts come from the same seed/index,
// so an image is the same every time it is drawn with this OpenCV build.
cv::Mat render_shapes_scene(const ShapesScene& scene, uint64_t seed, int64_t index);

}  // namespace expnet
