// Writes a dataset index (schema: docs/datasets.md, "Index") image by image:
// what build_dataset_index and build_dataset_index_from_file share, so both
// write the same tables and rows. Private to the data area.
#pragma once

#include <sqlite3.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "system/sqlite_statement.h"
#include "expnet/data/dataset.h"
#include "expnet/data/dataset_index.h"

namespace expnet {

// Where the indexed images come from (the meta table).
struct IndexOrigin {
  std::string source;  // the dataset file
  std::string image_root;
  DatasetFormat format = DatasetFormat::Karpathy;
};

class IndexWriter {
 public:
  // Starts the index in a temporary file beside db_path (one transaction,
  // no journal: the file is thrown away on failure, not repaired). Throws
  // when db_path's folder does not exist, or when db_path is anything but
  // nothing, an empty file or an index of ours (a run store, a text file, a
  // FIFO, a link: never replaced). Removes temporary files that killed builds
  // of the same db_path left.
  IndexWriter(const std::string& db_path, const IndexOrigin& origin, const IndexBuildControl& control);
  // Removes the temporary file unless finish() moved it over db_path.
  ~IndexWriter();
  IndexWriter(const IndexWriter&) = delete;
  IndexWriter& operator=(const IndexWriter&) = delete;

  void set_total(int64_t images) { total_ = images; }
  // Adds an image and its captions (tokens already cleaned). false, writing
  // nothing: an image with this cocoid was added before. Throws
  // IndexBuildCancelled when the control says so (checked every few images).
  bool add(const DatasetImage& image);
  // Splits, word counts, indexes and the full-text index, then the rename.
  IndexBuildReport finish();

 private:
  void check_cancelled();
  void write_splits_and_words(IndexBuildReport& report);
  void remove_temp();

  std::string db_path_, target_, temp_, label_;  // label_: what SQLite errors start with
  int temp_lock_ = -1;  // holds the temporary file's builder lock (index_writer.cpp)
  const IndexBuildControl& control_;
  std::chrono::steady_clock::time_point start_;
  sqlite::Database db_;
  std::unique_ptr<sqlite::Statement> image_, caption_;
  std::array<std::pair<int64_t, int64_t>, 4> per_split_{};  // images, captions by Split
  // word -> (train + restval, all) counts; sorted once at the end.
  std::unordered_map<std::string, std::pair<int64_t, int64_t>> counts_;
  int64_t total_ = 0, done_ = 0, captions_ = 0;
  bool finished_ = false;
};

}  // namespace expnet
