// AIC against PNAIC on the same images (`expnet compare`, the studio's Compare
// page): each mode's captions, decoding steps, decode latency and, when the
// images have reference captions, the corpus scores of `expnet score`. Modes:
// aic-greedy and aic-beam<B> of the AIC model, pnaic-k<K> of each PNAIC model
// (its default options: greedy per group). Each image is decoded alone (batch
// 1, the incremental decoder) by every mode in turn, after one warm-up image
// per mode, and timed on its second decode (the model warm again), so the
// latencies are comparable; docs/pnaic.md.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "expnet/decode/decoding.h"

namespace expnet {

struct ComparisonRequest {
  std::string aic;                 // checkpoint of ours or built-in name ("demo")
  std::vector<std::string> pnaic;  // checkpoints or built-in names ("pnaic-demo-k5")
  int beam = 3;                    // aic-beam<B>; 0 or 1 = no beam mode
  std::vector<std::string> images;                              // paths as opened
  std::vector<std::vector<std::string>> references;            // per image (raw), or empty: no scores
  std::string device = "cpu";
  // Called after each image (every mode has decoded it): (modes, images done).
  std::function<void(size_t modes, size_t done)> progress;
  // Asked before each image; true stops the comparison (ComparisonCancelled).
  std::function<bool()> cancelled;
};

// Thrown by compare_decoding when request.cancelled() says so.
struct ComparisonCancelled : std::runtime_error {
  ComparisonCancelled() : std::runtime_error("compare: cancelled") {}
};

struct ModeCaption {
  std::string text;
  int steps = 0;
  std::vector<WordGroup> groups;        // PNAIC only
  std::vector<std::string> group_texts; // the words of each group
  std::string error;                    // the image could not be captioned
};

struct ModeSummary {
  std::string name;        // aic-greedy, aic-beam3, pnaic-k5
  std::string checkpoint;  // the file
  int groups = 0;          // K (0 for AIC)
  int beam = 1;
  double steps_mean = 0;
  double decode_ms_per_image = 0;  // median over the images (the warm-up excluded)
  double speedup = 0;  // aic-greedy's decode_ms_per_image / this mode's (measured side by side)
  std::map<std::string, double> scores;  // Bleu_1..Bleu_4, ROUGE_L, CIDEr (empty without references)
  std::vector<ModeCaption> captions;     // per image, in request order
};

struct ComparisonResult {
  std::vector<std::string> images;
  std::vector<ModeSummary> modes;
};

// Throws std::runtime_error naming the model file or the image list when a model
// cannot be loaded or is of the wrong kind (an AIC model given as PNAIC or the
// reverse); an unreadable image is reported in its captions' `error`.
ComparisonResult compare_decoding(const ComparisonRequest& request);

}  // namespace expnet
