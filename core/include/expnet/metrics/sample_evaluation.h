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
//   corpus(evaluation_id INTEGER, key TEXT, value REAL,  -- the last scoring's corpus
//          PRIMARY KEY(evaluation_id, key))               -- scores (Bleu_1 .. CIDEr)
// options is decoding_options_json() of the complete()d options; dataset the
// absolute path of the file load_dataset read; split train, restval, val, test
// or all. A sample's scores are NULL while unscored and for an image without
// references; a sample that could not be captioned has `error`, caption "" and
// is scored as an empty caption (as `expnet compare` scores it). docs/evaluation.md.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "expnet/decode/decoding.h"
#include "expnet/model/precision.h"

namespace expnet {

struct SampleEvaluationRequest {
  std::string model;       // a preset or built-in name ("demo"), or a config JSON (as ModelSource::model)
  std::string checkpoint;  // .pth; empty with a built-in name
  std::string vocab;       // when the checkpoint carries none
  std::string device = "cpu";
  // Part of the key: a bf16 evaluation's model label ends in " [bf16]". Where
  // bf16 is slow (no avx512_bf16/AMX) it runs in fp32, with a warning.
  Precision precision = Precision::FP32;
  DecodingOptions options;  // complete()d by the model before use; part of the key
  // As `expnet caption` decodes: true = the decoding options the checkpoint
  // carries (carried_decoding.h) replace those of `options`, but for the keys
  // in `given` (the ones the user set). false = `options` as they are.
  bool use_carried_decoding = false;
  std::vector<std::string> given;
  std::string dataset;      // any path load_dataset takes
  std::string split;        // train, restval, val, test, or all
  size_t limit = 0;         // at most N images of the split (0 = all)
  std::string db;           // the evaluation store; empty = default_evaluation_db(dataset)
  // (done, total): once before captioning (done = the images found in the
  // store) and after each image; `cancelled()` true stops before the next image
  // (SampleEvaluationCancelled), keeping what was captioned (each image is
  // committed as it is captioned). Both are called on the calling thread.
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
  bool scored = false;  // false: the image has no references (or is not scored yet)
  std::string error;    // the image could not be captioned
};

struct SampleEvaluation {
  int64_t id = 0;  // in the store
  std::string db, checkpoint_sha256, options, model, dataset, split, created;
  size_t resumed = 0;                     // images of the request found captioned in the store
  size_t captioned = 0;                   // images this run captioned
  size_t samples = 0;                     // captioned images the store holds for it
  std::map<std::string, double> corpus;   // the keys of `expnet score --json`
  // In dataset order: every captioned image of the evaluation (a run with a
  // smaller --limit than an earlier one scores all that the store holds).
  std::vector<SampleScore> per_image;
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

// `expnet eval --json`'s object: {corpus, per_image: [{image, cocoid, caption,
// scores?: {CIDEr, Bleu_4}, error?}], evaluation: {id, db, checkpoint_sha256,
// resumed, captioned, model, options, dataset, split, created}}, and back
// (throws naming `what` when the text is not such an object).
std::string sample_evaluation_json(const SampleEvaluation& evaluation);
SampleEvaluation sample_evaluation_from_json(const std::string& text, const std::string& what);

// An evaluation made on another machine (`expnet eval --host`) added to the
// store `db` (empty: default_evaluation_db) of `home_dataset`, this computer's
// copy of the dataset it was made on, so the Datasets page shows and sorts by
// it. Its own key: `origin` (the host) joins the options and the model label
// ("MODEL on HOST"). Samples are matched by image id; each must be in the home
// split (else it throws: another dataset), and all are scored again with the
// home references. Importing it again adds only what is new; resumed and
// captioned stay the host's counts.
SampleEvaluation import_sample_evaluation(const SampleEvaluation& there, const std::string& home_dataset,
                                          const std::string& db, const std::string& origin);

}  // namespace expnet
