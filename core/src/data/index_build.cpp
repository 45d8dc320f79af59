// Building the dataset index: from a Dataset in memory, straight from its file
// (Karpathy JSON streamed, the other formats through load_dataset), and the
// studio's cached index of a dataset file.
#include "expnet/data/index_build.h"

#include "expnet/data/dataset_index.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <condition_variable>
#include <deque>
#include <exception>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "data/index_writer.h"
#include "data/karpathy_stream.h"
#include "data/photo_folder.h"
#include "expnet/system/digest.h"
#include "expnet/system/paths.h"
#include "system/sqlite_statement.h"

namespace fs = std::filesystem;

namespace expnet {
namespace {

IndexBuildReport index_dataset(const Dataset& dataset, const std::string& db_path, const IndexBuildControl& control) {
  IndexWriter writer(db_path, {dataset.source, dataset.image_root, dataset.format}, control);
  writer.set_total(static_cast<int64_t>(dataset.images.size()));
  for (const auto& image : dataset.images)
    if (!writer.add(image))
      throw std::runtime_error(dataset.source + ": image id " + std::to_string(image.cocoid) + " (" + image.filename +
                               ") appears twice; every image needs its own cocoid/id");
  return writer.finish();
}

// Batches of images from the reading thread (simdjson, clean_caption) to the
// writing one (SQLite): the two halves take about as long, so with two cores
// they overlap. Bounded, so memory stays a few batches.
struct ReadImage {
  DatasetImage image;
  size_t index = 0, offset = 0;
};

class ImagePipe {
 public:
  // false: the writer has stopped; the reader should too.
  bool push(std::vector<ReadImage>&& batch) {
    std::unique_lock<std::mutex> lock(mutex_);
    space_.wait(lock, [&] { return batches_.size() < kMaxBatches || stopped_; });
    if (stopped_) return false;
    batches_.push_back(std::move(batch));
    ready_.notify_one();
    return true;
  }
  // false at the end; rethrows the reader's error.
  bool pop(std::vector<ReadImage>& batch) {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return !batches_.empty() || closed_; });
    if (batches_.empty()) {
      if (error_) std::rethrow_exception(error_);
      return false;
    }
    batch = std::move(batches_.front());
    batches_.pop_front();
    space_.notify_one();
    return true;
  }
  void close(std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    error_ = error;
    ready_.notify_one();
  }
  void stop() {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
    space_.notify_one();
  }

 private:
  static constexpr size_t kMaxBatches = 4;
  std::mutex mutex_;
  std::condition_variable ready_, space_;
  std::deque<std::vector<ReadImage>> batches_;
  bool closed_ = false, stopped_ = false;
  std::exception_ptr error_;
};

struct StopReading {};

// Reads on a second thread and writes on this one.
IndexBuildReport index_stream(KarpathyStream& stream, IndexWriter& writer) {
  constexpr size_t kBatch = 256;
  ImagePipe pipe;
  std::thread reader([&stream, &pipe] {
    try {
      std::vector<ReadImage> batch;
      stream.read([&](DatasetImage&& image, size_t index, size_t offset) {
        batch.push_back({std::move(image), index, offset});
        if (batch.size() < kBatch) return;
        if (!pipe.push(std::move(batch))) throw StopReading();
        batch.clear();
      });
      if (!batch.empty()) pipe.push(std::move(batch));
      pipe.close(nullptr);
    } catch (const StopReading&) {
      pipe.close(nullptr);
    } catch (...) {
      pipe.close(std::current_exception());
    }
  });
  try {
    std::vector<ReadImage> batch;
    while (pipe.pop(batch))
      for (const auto& read : batch)
        if (!writer.add(read.image))
          throw std::runtime_error(stream.place(read.index, read.offset) + ": image id " + std::to_string(read.image.cocoid) + " (" +
                                   read.image.filename + ") appears twice; every image needs its own cocoid/id");
  } catch (...) {
    pipe.stop();
    reader.join();
    throw;
  }
  reader.join();
  return writer.finish();
}

// load_dataset's image root of a Karpathy file.
std::string image_root_of(const std::string& file, const DatasetLoadOptions& options) {
  if (!options.image_root.empty()) return options.image_root;
  const std::string folder = fs::path(file).parent_path().string();
  return folder.empty() ? "." : folder;
}

// The source an index says it was built from; "" when it cannot be read.
std::string indexed_source(const std::string& db_path) {
  const std::string label = "index '" + db_path + "'";
  try {
    const sqlite::Database db = sqlite::open(db_path, SQLITE_OPEN_READONLY, label);
    sqlite::Statement source(db.get(), label, "SELECT value FROM meta WHERE key = 'source'");
    return source.step() ? source.text(0) : std::string();
  } catch (const std::runtime_error&) {
    return {};  // not an index
  }
}

// Indexes of earlier states of the same dataset file (another size or mtime,
// so another key) are never used again.
void remove_superseded(const std::string& current, const std::string& source) {
  std::error_code ec;
  const fs::path folder = fs::path(current).parent_path();
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string path = entry.path().string();
    const std::string name = entry.path().filename().string();
    // Only our <key>.sqlite files: the evaluation stores beside them (<key>.evaluations.sqlite) are kept.
    if (path == current || entry.path().extension() != ".sqlite" || name.find('.') != name.size() - 7) continue;
    if (indexed_source(path) != source) continue;
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix, ec);
  }
}

}  // namespace

IndexBuildReport build_dataset_index(const Dataset& dataset, const std::string& db_path) {
  return index_dataset(dataset, db_path, {});
}

IndexBuildReport build_dataset_index_from_file(const std::string& dataset_path, const std::string& db_path,
                                               const DatasetLoadOptions& options, const IndexBuildControl& control) {
  const auto [file, format] = resolve_dataset(dataset_path, options.format);
  if (format == DatasetFormat::Auto || format == DatasetFormat::Karpathy) {
    KarpathyStream stream(file, options);
    if (!stream.is_coco()) {
      IndexWriter writer(db_path, {file, image_root_of(file, options), DatasetFormat::Karpathy}, control);
      writer.set_total(static_cast<int64_t>(stream.images()));
      return index_stream(stream, writer);
    }
  }
  // COCO captions, CSV and JSONL: their readers build the whole Dataset first.
  return index_dataset(load_dataset(dataset_path, options), db_path, control);
}

std::string index_cache_path(const std::string& dataset_path) {
  const auto [file, format] = resolve_dataset(dataset_path, DatasetFormat::Auto);
  if (format == DatasetFormat::Photos) {
    const std::string absolute = fs::absolute(file).lexically_normal().string();
    return (fs::path(cache_dir()) / "indexes" /
            (sha1_hex(absolute + '\n' + photo_folder_fingerprint(file)) + ".sqlite"))
        .string();
  }
  struct stat info {};
  if (::stat(file.c_str(), &info) != 0) throw std::runtime_error("cannot read dataset file '" + file + "'; check the path and its permissions");
  const std::string absolute = fs::absolute(file).lexically_normal().string();
  const std::string key = sha1_hex(absolute + '\n' + std::to_string(info.st_size) + '\n' + std::to_string(info.st_mtim.tv_sec) +
                                   '.' + std::to_string(info.st_mtim.tv_nsec));
  return (fs::path(cache_dir()) / "indexes" / (key + ".sqlite")).string();
}

std::string ensure_dataset_index(const std::string& dataset_path, const IndexBuildControl& control, bool* built) {
  const std::string db = index_cache_path(dataset_path);
  if (built) *built = false;
  std::error_code ec;
  if (fs::is_regular_file(db, ec)) {
    try {
      const DatasetIndex index(db);  // throws for another version, or a file that is not an index
      (void)index.split_counts();
      return db;
    } catch (const std::runtime_error&) {
      // Our own cache file, unusable: removed and rebuilt below, never half-used
      // (an index build replaces nothing but an index).
      for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db + suffix, ec);
    }
  }
  ensure_dir(fs::path(db).parent_path().string());
  build_dataset_index_from_file(dataset_path, db, {}, control);
  if (built) *built = true;
  remove_superseded(db, DatasetIndex(db).meta("source"));
  return db;
}

}  // namespace expnet
