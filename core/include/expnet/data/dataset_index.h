// SQLite index of a captioning dataset for browsing (the studio's dataset page
// and `expnet dataset query`): images, splits, captions, token counts, FTS5
// full-text search on the cleaned captions, and thumbnails cached on demand.
// Schema: docs/datasets.md ("Index").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "expnet/data/dataset.h"

struct sqlite3;

namespace expnet {

inline constexpr int kDatasetIndexVersion = 1;

struct IndexBuildReport {
  int64_t images = 0, captions = 0, words = 0;
  double seconds = 0;
};

// Builds the index of `dataset` into `db_path`: written to a temporary file in
// the same folder and renamed over db_path only when complete, so a failed or
// interrupted run never leaves a half-written index. Throws std::runtime_error.
IndexBuildReport build_dataset_index(const Dataset& dataset, const std::string& db_path);

// Progress and cancellation of an index build (both optional; called from the
// building thread). `progress(done, total)` counts images; `cancelled()` true
// stops the build (IndexBuildCancelled), leaving any previous index untouched.
struct IndexBuildControl {
  std::function<void(int64_t done, int64_t total)> progress;
  std::function<bool()> cancelled;
};
struct IndexBuildCancelled : std::runtime_error {
  IndexBuildCancelled() : std::runtime_error("index build cancelled") {}
};

// Builds the index of the dataset at `dataset_path` (any path load_dataset
// takes) straight from the file: a streaming pass (no document tree for
// Karpathy JSON), batched inserts, the full-text index built once at the end.
// Same tables and contents as build_dataset_index(load_dataset(path)).
IndexBuildReport build_dataset_index_from_file(const std::string& dataset_path, const std::string& db_path,
                                               const DatasetLoadOptions& options = {},
                                               const IndexBuildControl& control = {});

// Where the studio keeps the index of `dataset_path`:
// $XDG_CACHE_HOME/expnet/indexes/<key>.sqlite (~/.cache when unset), the key a
// digest of the absolute path, size and mtime of the file resolve_dataset reads,
// so an edited dataset gets a new index.
std::string index_cache_path(const std::string& dataset_path);

// The cached index of `dataset_path`, built first when missing, from another
// index version, or unreadable (never half-used). Returns its path; `built`
// says whether it was built now. Throws what the build throws.
std::string ensure_dataset_index(const std::string& dataset_path, const IndexBuildControl& control = {},
                                 bool* built = nullptr);

// Order of the matching images. By score: the images of an evaluation (see
// IndexQuery::evaluation), CIDEr-D ascending = worst first; images it has not
// scored come last.
enum class IndexSort { id, caption_length, score_ascending, score_descending };

struct IndexQuery {
  std::string split;  // "" = all splits
  std::string text;   // words every matching caption contains (cleaned like captions); "" = all
  int64_t page = 1;   // 1-based
  int64_t page_size = 20;
  bool count_total = true;  // also count all matching images (one more query)
  IndexSort sort = IndexSort::id;
  // Per-sample evaluation to join (expnet/metrics/sample_evaluation.h): its
  // store file and evaluation id; empty/0 = none. Fills IndexedImage's model
  // caption and scores, and allows sorting by score.
  std::string evaluation_db;
  int64_t evaluation_id = 0;
};

struct IndexedImage {
  int64_t cocoid = 0;
  std::string filepath, filename, split;
  int width = 0, height = 0;
  std::vector<std::string> captions;  // raw, in file order
  // With IndexQuery::evaluation: the model's caption and its scores, when scored.
  bool evaluated = false;
  std::string model_caption;
  double cider_d = 0, bleu4 = 0;
};

struct IndexPage {
  std::vector<IndexedImage> images;
  int64_t total = -1;  // matching images; -1 when not counted
};

class DatasetIndex {
 public:
  // Opens an index built by build_dataset_index. Throws std::runtime_error
  // naming the file when it is missing, not SQLite, or of another version.
  explicit DatasetIndex(const std::string& db_path);
  ~DatasetIndex();

  IndexPage query(const IndexQuery& query) const;
  std::string meta(const std::string& key) const;  // source, format, image_root, version, created
  std::vector<std::pair<std::string, int64_t>> split_counts() const;  // images per split
  // ROOT/filepath/filename of an image; throws when the cocoid is unknown.
  std::string image_path(int64_t cocoid) const;
  // PNG bytes of the image scaled to fit size x size, cached in the
  // thumbnails table on first use (the file is decoded by `source`).
  std::vector<unsigned char> thumbnail(int64_t cocoid, int size, const ImageSource& source);

 private:
  struct CloseDatabase {
    void operator()(sqlite3* db) const;
  };
  std::string path_;
  std::unique_ptr<sqlite3, CloseDatabase> db_;
};

// The FTS5 query for a user's words: each cleaned word quoted, all required.
std::string fts_query_for(const std::string& words);

}  // namespace expnet
