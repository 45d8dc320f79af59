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
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "expnet/decode/decoding.h"
#include "expnet/model/precision.h"

namespace expnet {

class Captioner;
struct ModeSummary;

struct ComparisonRequest {
  std::string aic;                 // checkpoint of ours or built-in name ("demo")
  std::vector<std::string> pnaic;  // checkpoints or built-in names ("pnaic-demo-k5")
  int beam = 3;                    // aic-beam<B>; 0 or 1 = no beam mode
  std::vector<std::string> images;                              // paths as opened
  std::vector<std::vector<std::string>> references;            // per image (raw), or empty: no scores
  std::string device = "cpu";
  // Every model's matrix products (already the effective one: effective_precision).
  Precision precision = Precision::FP32;
  // Called after each image (every mode has decoded it): (modes, images done).
  std::function<void(size_t modes, size_t done)> progress;
  // Asked before each image; true stops the comparison (ComparisonCancelled).
  std::function<bool()> cancelled;
  // Called after each image with every mode so far: modes[m].captions[image]
  // is that image's caption by mode m (the studio shows rows as they come).
  std::function<void(size_t image, const std::vector<ModeSummary>& modes)> captioned;
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
  double decode_ms = 0;                 // the timed (second) decode
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
  Precision precision = Precision::FP32;  // the AIC model's (every model's, from the CLI)
};

// A model of a comparison, loaded and checked once (the studio loads each
// slot in its own right, so one broken file leaves the others usable).
struct ComparisonModel {
  std::string spec;  // as given: a built-in name or a checkpoint
  std::string file;  // the checkpoint file it was read from
  std::shared_ptr<Captioner> captioner;
  Precision precision = Precision::FP32;  // its matrix products
};
enum class ComparisonRole { aic, pnaic };

// `spec`: a built-in name or a checkpoint of ours (`vocab`: its vocabulary
// when the checkpoint carries none), its products in `precision` (an effective
// one). Throws std::runtime_error naming the file when it cannot be loaded or
// is of the wrong kind for `role`.
ComparisonModel load_comparison_model(const std::string& spec, const std::string& vocab, ComparisonRole role,
                                      const std::string& device, Precision precision = Precision::FP32);

// One image captioned by one model with `options` (complete()d), batch 1, the
// incremental decoder: the step compare_decoding runs for every mode and image,
// and what `expnet eval` and the Datasets page's evaluation run per image.
// `timed`: decode twice and keep the second decode's time (the model warm);
// otherwise decode once. An unreadable image is reported in `error`.
ModeCaption caption_image(Captioner& captioner, const DecodingOptions& options, const std::string& image, bool timed);

// Throws std::runtime_error naming the model file or the image list when a model
// cannot be loaded or is of the wrong kind (an AIC model given as PNAIC or the
// reverse); an unreadable image is reported in its captions' `error`.
ComparisonResult compare_decoding(const ComparisonRequest& request);
// The same with models already loaded (request.aic, pnaic and device unused).
ComparisonResult compare_decoding(const ComparisonModel& aic, const std::vector<ComparisonModel>& pnaic,
                                  const ComparisonRequest& request);

// `dataset`'s images of `split` ("all": every image), at most `limit` (0 = all),
// with their raw references, appended to request.images and .references.
// Throws naming the dataset when the split has no images.
void add_dataset_images(const std::string& dataset, const std::string& split, size_t limit,
                        ComparisonRequest& request);

// The result as `expnet compare --json` prints it: {images, precision, modes: [{name,
// checkpoint, groups, beam, steps_mean, decode_ms_per_image, speedup, scores?}],
// per_image: [{image, captions: {MODE: {text, steps, decode_ms, groups?} or {error}}}]}.
std::string comparison_json(const ComparisonResult& result);
// One mode's caption of an image as that JSON has it: {text, steps, decode_ms, groups?} or {error}.
std::string mode_caption_json(const ModeCaption& caption);
// One per_image entry of that JSON: image `index` (its path `image`) by every mode.
std::string comparison_image_json(const std::vector<ModeSummary>& modes, size_t index, const std::string& image);

}  // namespace expnet
