// Per-sample evaluation of a captioning model on a dataset split (`expnet eval`,
// the studio's Datasets page): every image captioned by the model (with
// caption_image, the per-image step of `expnet compare`), its caption and its
// CIDEr-D and BLEU-4 stored in a SQLite evaluation store, keyed by the
// checkpoint's SHA-256 and the decoding options, so several evaluations of one
// dataset coexist and an interrupted one resumes (images already captioned are
// kept). Per-image and corpus scores are `expnet score`'s on the same captions.
//
// Store schema (version 1), which DatasetIndex joins to sort by score:
//   meta(key TEXT PRIMARY KEY, value TEXT)           -- version
//   evaluations(id INTEGER PRIMARY KEY, checkpoint_sha256 TEXT, options TEXT,
//               model TEXT, dataset TEXT, split TEXT, created TEXT,
//               UNIQUE(checkpoint_sha256, options, dataset, split))
//   samples(evaluation_id INTEGER, cocoid INTEGER, image TEXT, caption TEXT,
//           cider_d REAL, bleu4 REAL, error TEXT, PRIMARY KEY(evaluation_id, cocoid))
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "expnet/decode/decoding.h"

namespace expnet {

struct SampleEvaluationRequest {
  std::string model;       // a preset or built-in name ("demo"), or a config JSON (as ModelSource::model)
  std::string checkpoint;  // .pth; empty with a built-in name
  std::string vocab;       // when the checkpoint carries none
  std::string device = "cpu";
  DecodingOptions options;  // complete()d by the model before use; part of the key
  std::string dataset;      // any path load_dataset takes
  std::string split;        // train, restval, val, test, or all
  size_t limit = 0;         // at most N images of the split (0 = all)
  std::string db;           // the evaluation store; empty = default_evaluation_db(dataset)
  // (done, total) after each image; `cancelled()` true stops before the next image
  // (SampleEvaluationCancelled), keeping what was captioned.
  std::function<void(size_t done, size_t total)> progress;
  std::function<bool()> cancelled;
};

struct SampleEvaluationCancelled : std::runtime_error {
  SampleEvaluationCancelled() : std::runtime_error("evaluation cancelled") {}
};

struct SampleScore {
  int64_t cocoid = 0;
  std::string image;    // path as the dataset resolves it
  std::string caption;  // the model's
  double cider_d = 0, bleu4 = 0;
  std::string error;    // the image could not be captioned
};

struct SampleEvaluation {
  int64_t id = 0;  // in the store
  std::string db, checkpoint_sha256, options, model, dataset, split, created;
  size_t resumed = 0;                     // images found captioned in the store
  std::map<std::string, double> corpus;   // the keys of `expnet score --json`
  std::vector<SampleScore> per_image;     // in dataset order
};

// Runs (or resumes) the evaluation; throws std::runtime_error naming the file
// for a model, dataset or store that cannot be used.
SampleEvaluation evaluate_samples(const SampleEvaluationRequest& request);

// The store beside the dataset's cached index (index_cache_path with
// ".evaluations.sqlite" for ".sqlite").
std::string default_evaluation_db(const std::string& dataset_path);

// The evaluations a store holds (per_image left empty), newest first; none
// when the file does not exist.
std::vector<SampleEvaluation> list_sample_evaluations(const std::string& db);
// One evaluation with its per-image scores. Throws when the id is unknown.
SampleEvaluation load_sample_evaluation(const std::string& db, int64_t id);

}  // namespace expnet
