// The dataset index read back: opening (version check), meta, split counts,
// image paths and thumbnails. Building: index_build.cpp; queries: index_query.cpp.
#include "expnet/data/dataset_index.h"

#include <sqlite3.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <filesystem>
#include <memory>
#include <stdexcept>

#include "expnet/text/caption_text.h"
#include "system/sqlite_statement.h"

namespace fs = std::filesystem;

namespace expnet {
namespace {

std::string label(const std::string& path) { return "index '" + path + "'"; }

}  // namespace

void DatasetIndex::CloseDatabase::operator()(sqlite3* db) const { sqlite3_close(db); }

DatasetIndex::DatasetIndex(const std::string& db_path) : path_(db_path) {
  std::error_code ec;
  if (!fs::is_regular_file(db_path, ec))
    throw std::runtime_error("index '" + db_path + "' does not exist; build it with: expnet dataset index --dataset PATH --db " + db_path);
  sqlite3* db = nullptr;
  const int opened = sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
  db_.reset(db);  // closed on every way out, the throws below included
  if (opened != SQLITE_OK)
    throw std::runtime_error("cannot open index '" + db_path + "': " + (db ? sqlite3_errmsg(db) : "out of memory"));
  sqlite3_busy_timeout(db, 5000);
  std::string version;
  try {
    version = meta("version");
  } catch (const std::runtime_error&) {
    throw std::runtime_error("'" + db_path + "' is not a dataset index (no meta table); rebuild it with expnet dataset index");
  }
  if (version != std::to_string(kDatasetIndexVersion))
    throw std::runtime_error("index '" + db_path + "' has version " + version + ", this program reads version " +
                             std::to_string(kDatasetIndexVersion) + "; rebuild it with expnet dataset index");
  image_root_ = meta("image_root");  // read once: a page of results asks for 100 paths
}

DatasetIndex::~DatasetIndex() = default;

std::string DatasetIndex::meta(const std::string& key) const {
  sqlite::Statement s(db_.get(), label(path_), "SELECT value FROM meta WHERE key = ?");
  s.bind(1, key);
  return s.step() ? s.text(0) : std::string();
}

std::vector<std::pair<std::string, int64_t>> DatasetIndex::split_counts() const {
  sqlite::Statement s(db_.get(), label(path_), "SELECT name, images FROM splits ORDER BY id");
  std::vector<std::pair<std::string, int64_t>> out;
  while (s.step()) out.emplace_back(s.text(0), s.integer(1));
  return out;
}

std::string DatasetIndex::image_path(int64_t cocoid) const {
  sqlite::Statement s(db_.get(), label(path_), "SELECT filepath, filename FROM images WHERE cocoid = ?");
  s.bind(1, cocoid);
  if (!s.step()) throw std::runtime_error("index '" + path_ + "' has no image with id " + std::to_string(cocoid));
  IndexedImage image;
  image.filepath = s.text(0);
  image.filename = s.text(1);
  return image_path(image);
}

std::string DatasetIndex::image_path(const IndexedImage& image) const {
  fs::path path(image_root_);
  if (!image.filepath.empty()) path /= image.filepath;
  return (path / image.filename).string();
}

std::vector<unsigned char> DatasetIndex::thumbnail(int64_t cocoid, int size, const ImageSource& source) {
  if (size < 8 || size > 1024) throw std::invalid_argument("thumbnail size must be between 8 and 1024 pixels");
  {
    sqlite::Statement cached(db_.get(), label(path_), "SELECT png FROM thumbnails WHERE cocoid = ?1 AND size = ?2");
    cached.bind(1, cocoid).bind(2, static_cast<int64_t>(size));
    if (cached.step()) return cached.blob(0);
  }
  const std::string file = image_path(cocoid);
  const cv::Mat rgb = source(file);
  if (rgb.empty() || rgb.type() != CV_8UC3) throw std::runtime_error("image '" + file + "' did not decode to an 8-bit RGB image");
  const double scale = std::min(1.0, static_cast<double>(size) / std::max(rgb.cols, rgb.rows));
  cv::Mat small, bgr;
  cv::resize(rgb, small, cv::Size(std::max(1, static_cast<int>(std::lround(rgb.cols * scale))),
                                  std::max(1, static_cast<int>(std::lround(rgb.rows * scale)))),
             0, 0, cv::INTER_AREA);
  cv::cvtColor(small, bgr, cv::COLOR_RGB2BGR);
  std::vector<unsigned char> png;
  cv::imencode(".png", bgr, png);
  sqlite::Statement store(db_.get(), label(path_) + " (thumbnails: check that the index file is writable)",
                          "INSERT OR REPLACE INTO thumbnails(cocoid, size, png) VALUES(?1, ?2, ?3)");
  store.bind(1, cocoid).bind(2, static_cast<int64_t>(size)).bind_blob(3, png.data(), png.size());
  store.step();
  return png;
}

}  // namespace expnet
