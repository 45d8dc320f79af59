// SQLite dataset index: build (temp file + rename), query, thumbnails.
#include "expnet/data/dataset_index.h"

#include <sqlite3.h>
#include <fcntl.h>
#include <unistd.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <map>
#include <random>
#include <stdexcept>

#include "expnet/text/caption_text.h"

namespace fs = std::filesystem;

namespace expnet {
namespace {

std::runtime_error sql_error(sqlite3* db, const std::string& path, const std::string& what) {
  return std::runtime_error("index '" + path + "': " + what + ": " + (db ? sqlite3_errmsg(db) : "out of memory"));
}

void exec(sqlite3* db, const std::string& path, const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    const std::string text = message ? message : "unknown error";
    sqlite3_free(message);
    throw std::runtime_error("index '" + path + "': " + text + " (in: " + std::string(sql).substr(0, 80) + ")");
  }
}

// A prepared statement that finalises itself.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& path, const std::string& sql) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) throw sql_error(db, path, "cannot prepare query");
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, int64_t v) { return check(sqlite3_bind_int64(stmt_, i, v)); }
  Statement& bind(int i, const std::string& v) { return check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT)); }
  Statement& bind_blob(int i, const void* data, size_t size) {
    return check(sqlite3_bind_blob(stmt_, i, data, static_cast<int>(size), SQLITE_TRANSIENT));
  }
  Statement& bind_null(int i) { return check(sqlite3_bind_null(stmt_, i)); }
  // true while there is a row.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw sql_error(db_, path_, "query failed");
  }
  void run() {
    step();
    reset();
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  int64_t integer(int column) const { return sqlite3_column_int64(stmt_, column); }
  std::string text(int column) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, column))) : std::string();
  }
  std::vector<unsigned char> blob(int column) const {
    const auto* p = static_cast<const unsigned char*>(sqlite3_column_blob(stmt_, column));
    return p ? std::vector<unsigned char>(p, p + sqlite3_column_bytes(stmt_, column)) : std::vector<unsigned char>();
  }

 private:
  Statement& check(int rc) {
    if (rc != SQLITE_OK) throw sql_error(db_, path_, "cannot bind a value");
    return *this;
  }
  sqlite3* db_;
  std::string path_;
  sqlite3_stmt* stmt_ = nullptr;
};

const char* kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE splits(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, images INTEGER NOT NULL, captions INTEGER NOT NULL);
CREATE TABLE images(cocoid INTEGER PRIMARY KEY, position INTEGER NOT NULL, filepath TEXT NOT NULL, filename TEXT NOT NULL,
                    split_id INTEGER NOT NULL REFERENCES splits(id), width INTEGER, height INTEGER);
CREATE TABLE captions(id INTEGER PRIMARY KEY, cocoid INTEGER NOT NULL REFERENCES images(cocoid), position INTEGER NOT NULL,
                      split_id INTEGER NOT NULL, raw TEXT NOT NULL, tokens TEXT NOT NULL);
CREATE TABLE tokens(word TEXT PRIMARY KEY, train_count INTEGER NOT NULL, total_count INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE thumbnails(cocoid INTEGER NOT NULL, size INTEGER NOT NULL, png BLOB NOT NULL, PRIMARY KEY(cocoid, size)) WITHOUT ROWID;
-- Contentless FTS5 (rowid = captions.id) over the cleaned tokens and the split name:
-- "dog in val" is then one merge of two doclists inside FTS5, not 20,000 row lookups.
CREATE VIRTUAL TABLE captions_fts USING fts5(tokens, split, content='');
)sql";

// Created after the bulk insert: building them once is faster than maintaining them.
const char* kIndexes = R"sql(
CREATE INDEX images_by_split ON images(split_id, cocoid);
CREATE INDEX captions_by_image ON captions(cocoid, position);
INSERT INTO captions_fts(rowid, tokens, split) SELECT c.id, c.tokens, s.name FROM captions c JOIN splits s ON s.id = c.split_id;
)sql";

std::string join(const std::vector<std::string>& tokens) {
  std::string out;
  for (const auto& t : tokens) {
    if (!out.empty()) out += ' ';
    out += t;
  }
  return out;
}

void fsync_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

// Absolute form of a path; "" stands for the current folder.
std::string absolute(const std::string& path) {
  std::error_code ec;
  const fs::path result = fs::absolute(path.empty() ? fs::path(".") : fs::path(path), ec);
  return ec ? path : result.lexically_normal().string();
}

void fill_index(sqlite3* db, const std::string& path, const Dataset& dataset, IndexBuildReport& report) {
  exec(db, path, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-200000;");
  exec(db, path, kSchema);
  exec(db, path, "BEGIN");
  {
    Statement meta(db, path, "INSERT INTO meta(key, value) VALUES(?, ?)");
    const std::time_t now = std::time(nullptr);
    char created[32];
    std::strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
             {"version", std::to_string(kDatasetIndexVersion)}, {"source", absolute(dataset.source)},
             {"format", format_name(dataset.format)}, {"image_root", absolute(dataset.image_root)},
             {"created", created}})
      meta.bind(1, key).bind(2, value).run();

    std::map<int, std::pair<int64_t, int64_t>> per_split;
    Statement image(db, path, "INSERT INTO images(cocoid, position, filepath, filename, split_id, width, height) VALUES(?,?,?,?,?,?,?)");
    Statement caption(db, path, "INSERT INTO captions(cocoid, position, split_id, raw, tokens) VALUES(?,?,?,?,?)");
    std::map<std::string, std::pair<int64_t, int64_t>> counts;
    for (size_t i = 0; i < dataset.images.size(); ++i) {
      const auto& img = dataset.images[i];
      const int split = static_cast<int>(img.split);
      image.bind(1, img.cocoid).bind(2, static_cast<int64_t>(i)).bind(3, img.filepath).bind(4, img.filename).bind(5, split);
      img.width > 0 ? image.bind(6, img.width) : image.bind_null(6);
      img.height > 0 ? image.bind(7, img.height) : image.bind_null(7);
      try {
        image.run();
      } catch (const std::runtime_error&) {
        throw std::runtime_error(dataset.source + ": image id " + std::to_string(img.cocoid) + " (" + img.filename +
                                 ") appears twice; every image needs its own cocoid/id");
      }
      auto& split_counts = per_split[split];
      ++split_counts.first;
      split_counts.second += static_cast<int64_t>(img.captions.size());
      for (size_t c = 0; c < img.captions.size(); ++c) {
        const auto& cap = img.captions[c];
        caption.bind(1, img.cocoid).bind(2, static_cast<int64_t>(c)).bind(3, split).bind(4, cap.raw).bind(5, join(cap.tokens)).run();
        for (const auto& token : cap.tokens) {
          auto& count = counts[token];
          count.first += is_training_split(img.split);
          ++count.second;
        }
      }
      report.captions += static_cast<int64_t>(img.captions.size());
    }
    Statement split_row(db, path, "INSERT INTO splits(id, name, images, captions) VALUES(?,?,?,?)");
    for (const auto& [id, c] : per_split) split_row.bind(1, id).bind(2, split_name(static_cast<Split>(id))).bind(3, c.first).bind(4, c.second).run();
    Statement token(db, path, "INSERT INTO tokens(word, train_count, total_count) VALUES(?,?,?)");
    for (const auto& [word, c] : counts) token.bind(1, word).bind(2, c.first).bind(3, c.second).run();
    report.images = static_cast<int64_t>(dataset.images.size());
    report.words = static_cast<int64_t>(counts.size());
  }
  exec(db, path, kIndexes);
  exec(db, path, "COMMIT");
  exec(db, path, "PRAGMA journal_mode=WAL");  // readers (the studio) and a thumbnail writer may share it
}

}  // namespace

IndexBuildReport build_dataset_index(const Dataset& dataset, const std::string& db_path) {
  const auto start = std::chrono::steady_clock::now();
  const fs::path target = fs::absolute(db_path);
  std::error_code ec;
  if (!fs::is_directory(target.parent_path(), ec))
    throw std::runtime_error("cannot write index '" + db_path + "': folder '" + target.parent_path().string() + "' does not exist");
  std::random_device rd;
  const std::string temp = target.string() + ".tmp-" + std::to_string(rd());
  auto remove_temp = [&] {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(temp + suffix, ec);
  };
  IndexBuildReport report;
  sqlite3* db = nullptr;
  try {
    if (sqlite3_open_v2(temp.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK)
      throw sql_error(db, temp, "cannot create");
    fill_index(db, temp, dataset, report);
    if (sqlite3_close(db) != SQLITE_OK) throw sql_error(db, temp, "cannot close");
    db = nullptr;
  } catch (...) {
    if (db) sqlite3_close(db);
    remove_temp();
    throw;
  }
  fsync_file(temp);
  // Stale WAL files of an older index at the target would be replayed into the new one.
  for (const char* suffix : {"-wal", "-shm"}) fs::remove(target.string() + suffix, ec);
  fs::rename(temp, target, ec);
  if (ec) {
    remove_temp();
    throw std::runtime_error("cannot move the new index to '" + target.string() + "': " + ec.message());
  }
  fsync_file(target.parent_path().string());
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

std::string fts_query_for(const std::string& words) {
  std::string query;
  for (const auto& token : clean_caption(words)) {
    std::string quoted = "\"";
    for (const char c : token) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    quoted += '"';
    if (!query.empty()) query += ' ';
    query += quoted;
  }
  return query;
}

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
}

DatasetIndex::~DatasetIndex() = default;

std::string DatasetIndex::meta(const std::string& key) const {
  Statement s(db_.get(), path_, "SELECT value FROM meta WHERE key = ?");
  s.bind(1, key);
  return s.step() ? s.text(0) : std::string();
}

std::vector<std::pair<std::string, int64_t>> DatasetIndex::split_counts() const {
  Statement s(db_.get(), path_, "SELECT name, images FROM splits ORDER BY id");
  std::vector<std::pair<std::string, int64_t>> out;
  while (s.step()) out.emplace_back(s.text(0), s.integer(1));
  return out;
}

IndexPage DatasetIndex::query(const IndexQuery& q) const {
  if (q.page < 1) throw std::invalid_argument("--page must be at least 1");
  if (q.page_size < 1 || q.page_size > 10000) throw std::invalid_argument("--page-size must be between 1 and 10000");
  std::string where = " WHERE 1";
  int64_t split_id = -1;
  if (!q.split.empty()) {
    split_id = static_cast<int64_t>(parse_split(q.split));
    where += " AND i.split_id = ?1";
  }
  std::string fts = fts_query_for(q.text);
  if (!fts.empty()) {
    // Matching captions first (FTS5: words AND split), then their images.
    fts = "{tokens} : (" + fts + ")";
    if (split_id >= 0) fts += std::string(" AND {split} : \"") + split_name(static_cast<Split>(split_id)) + "\"";
    where += " AND i.cocoid IN (SELECT c.cocoid FROM captions c WHERE c.id IN "
             "(SELECT rowid FROM captions_fts WHERE captions_fts MATCH ?2))";
  }
  auto bind = [&](Statement& s) {
    if (split_id >= 0) s.bind(1, split_id);
    if (!fts.empty()) s.bind(2, fts);
  };
  IndexPage page;
  Statement rows(db_.get(), path_,
                 "SELECT i.cocoid, i.filepath, i.filename, i.split_id, i.width, i.height FROM images i" + where +
                     " ORDER BY i.cocoid LIMIT ?3 OFFSET ?4");
  bind(rows);
  rows.bind(3, q.page_size).bind(4, (q.page - 1) * q.page_size);
  while (rows.step()) {
    IndexedImage image;
    image.cocoid = rows.integer(0);
    image.filepath = rows.text(1);
    image.filename = rows.text(2);
    image.split = split_name(static_cast<Split>(rows.integer(3)));
    image.width = static_cast<int>(rows.integer(4));
    image.height = static_cast<int>(rows.integer(5));
    page.images.push_back(std::move(image));
  }
  Statement captions(db_.get(), path_, "SELECT raw FROM captions WHERE cocoid = ? ORDER BY position");
  for (auto& image : page.images) {
    captions.bind(1, image.cocoid);
    while (captions.step()) image.captions.push_back(captions.text(0));
    captions.reset();
  }
  if (q.count_total) {
    Statement total(db_.get(), path_, "SELECT count(*) FROM images i" + where);
    bind(total);
    page.total = total.step() ? total.integer(0) : 0;
  }
  return page;
}

std::string DatasetIndex::image_path(int64_t cocoid) const {
  Statement s(db_.get(), path_, "SELECT filepath, filename FROM images WHERE cocoid = ?");
  s.bind(1, cocoid);
  if (!s.step()) throw std::runtime_error("index '" + path_ + "' has no image with id " + std::to_string(cocoid));
  fs::path path(meta("image_root"));
  if (!s.text(0).empty()) path /= s.text(0);
  return (path / s.text(1)).string();
}

std::vector<unsigned char> DatasetIndex::thumbnail(int64_t cocoid, int size, const ImageSource& source) {
  if (size < 8 || size > 1024) throw std::invalid_argument("thumbnail size must be between 8 and 1024 pixels");
  {
    Statement cached(db_.get(), path_, "SELECT png FROM thumbnails WHERE cocoid = ? AND size = ?");
    cached.bind(1, cocoid).bind(2, size);
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
  Statement store(db_.get(), path_, "INSERT OR REPLACE INTO thumbnails(cocoid, size, png) VALUES(?,?,?)");
  store.bind(1, cocoid).bind(2, size).bind_blob(3, png.data(), png.size()).run();
  return png;
}

}  // namespace expnet
