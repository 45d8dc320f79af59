// Building the SQLite index of a captioning dataset (dataset_index.h): from a
// Dataset in memory or straight from its file, into a given file or the
// studio's cache, with progress and cancellation. Schema: docs/datasets.md.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

#include "expnet/data/dataset.h"

namespace expnet {

// 2: images.caption_length (and its indexes) for IndexSort::caption_length.
inline constexpr int kDatasetIndexVersion = 2;

struct IndexBuildReport {
  int64_t images = 0, captions = 0, words = 0;
  double seconds = 0;
};

// Builds the index of `dataset` into `db_path`: written to a temporary file in
// the same folder and renamed over db_path only when complete, so a failed or
// interrupted run never leaves a half-written index. Throws std::runtime_error.
IndexBuildReport build_dataset_index(const Dataset& dataset, const std::string& db_path);

// Progress and cancellation of an index build (both optional; called from the
// thread that called the build). `progress(done, total)` counts images, with
// done == total only once the index is in place; `cancelled()` is asked every
// few milliseconds (every 256 images, and inside SQLite's index builds), and
// true stops the build (IndexBuildCancelled), leaving any previous index
// untouched and no temporary file.
struct IndexBuildControl {
  std::function<void(int64_t done, int64_t total)> progress;
  std::function<bool()> cancelled;
};
struct IndexBuildCancelled : std::runtime_error {
  IndexBuildCancelled() : std::runtime_error("index build cancelled") {}
};

// Builds the index of the dataset at `dataset_path` (any path load_dataset
// takes) straight from the file: Karpathy JSON in a streaming pass (simdjson
// On-Demand, no document tree, read on a second thread while this one writes),
// other formats through load_dataset; the full-text index built once at the
// end. Same tables and contents as build_dataset_index(load_dataset(path)).
// Errors in the file: "FILE:LINE: reason; what to do".
IndexBuildReport build_dataset_index_from_file(const std::string& dataset_path, const std::string& db_path,
                                               const DatasetLoadOptions& options = {},
                                               const IndexBuildControl& control = {});

// Where the studio keeps the index of `dataset_path`:
// $XDG_CACHE_HOME/expnet/indexes/<key>.sqlite (~/.cache when unset), the key a
// digest of the absolute path, size and mtime of the file resolve_dataset reads,
// so an edited dataset gets a new index.
std::string index_cache_path(const std::string& dataset_path);

// The cached index of `dataset_path`, built first when missing, from another
// index version, or unreadable (never half-used); building it removes the
// indexes of earlier states of the same file. Returns its path; `built` says
// whether it was built now. Throws what the build throws.
std::string ensure_dataset_index(const std::string& dataset_path, const IndexBuildControl& control = {},
                                 bool* built = nullptr);

}  // namespace expnet
