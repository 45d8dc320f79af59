// SQLite index of a captioning dataset for browsing (the studio's dataset page
// and `expnet dataset query`): images, splits, captions, token counts, FTS5
// full-text search on the cleaned captions, and thumbnails cached on demand.
// Schema: docs/datasets.md ("Index").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
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

struct IndexQuery {
  std::string split;  // "" = all splits
  std::string text;   // words every matching caption contains (cleaned like captions); "" = all
  int64_t page = 1;   // 1-based
  int64_t page_size = 20;
  bool count_total = true;  // also count all matching images (one more query)
};

struct IndexedImage {
  int64_t cocoid = 0;
  std::string filepath, filename, split;
  int width = 0, height = 0;
  std::vector<std::string> captions;  // raw, in file order
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
