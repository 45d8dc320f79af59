// SQLite index of a captioning dataset for browsing (the studio's dataset page
// and `expnet dataset query`): images, splits, captions, token counts, FTS5
// full-text search on the cleaned captions, and thumbnails cached on demand.
// Building it: index_build.h; what a query asks and returns: index_query.h.
// Schema: docs/datasets.md ("Index").
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "expnet/data/dataset.h"
#include "expnet/data/index_build.h"
#include "expnet/data/index_query.h"

struct sqlite3;

namespace expnet {

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
  // The same for an image a query returned, without asking the database.
  std::string image_path(const IndexedImage& image) const;
  // PNG bytes of the image scaled to fit size x size, cached in the
  // thumbnails table on first use (the file is decoded by `source`).
  std::vector<unsigned char> thumbnail(int64_t cocoid, int size, const ImageSource& source);

 private:
  struct CloseDatabase {
    void operator()(sqlite3* db) const;
  };
  // Attaches the evaluation store as "ev" (kept attached until another one is asked for).
  void attach_evaluation(const std::string& store, int64_t evaluation_id) const;
  std::string path_;
  std::unique_ptr<sqlite3, CloseDatabase> db_;
  mutable std::mutex query_mutex_;  // one query at a time: the attached store is connection state
  mutable std::string attached_;
  std::string image_root_;  // meta("image_root")
};

}  // namespace expnet
