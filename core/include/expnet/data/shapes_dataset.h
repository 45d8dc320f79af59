// The built-in demo captioning set written to disk: the scenes of
// shapes_scene.h drawn by shapes_render.h, in Karpathy's format. See
// docs/datasets.md ("The shapes set").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "expnet/data/shapes_render.h"
#include "expnet/data/shapes_scene.h"

namespace expnet {

struct ShapesOptions {
  std::string out_dir;
  int64_t images = 1000;
  uint64_t seed = 1;
  ShapesStyle style = ShapesStyle::varied;
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
