#include "data/index_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <vector>

namespace fs = std::filesystem;

namespace expnet {
namespace {

const char* kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE splits(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, images INTEGER NOT NULL, captions INTEGER NOT NULL);
-- caption_length: mean cleaned tokens per caption of the image (0 without captions), for sorting.
CREATE TABLE images(cocoid INTEGER PRIMARY KEY, position INTEGER NOT NULL, filepath TEXT NOT NULL, filename TEXT NOT NULL,
                    split_id INTEGER NOT NULL REFERENCES splits(id), width INTEGER, height INTEGER,
                    caption_length REAL NOT NULL);
CREATE TABLE captions(id INTEGER PRIMARY KEY, cocoid INTEGER NOT NULL REFERENCES images(cocoid), position INTEGER NOT NULL,
                      split_id INTEGER NOT NULL, raw TEXT NOT NULL, tokens TEXT NOT NULL);
CREATE TABLE tokens(word TEXT PRIMARY KEY, train_count INTEGER NOT NULL, total_count INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE thumbnails(cocoid INTEGER NOT NULL, size INTEGER NOT NULL, png BLOB NOT NULL, PRIMARY KEY(cocoid, size)) WITHOUT ROWID;
-- Contentless FTS5 (rowid = captions.id) over the cleaned tokens and the split name:
-- "dog in val" is then one merge of two doclists inside FTS5, not 20,000 row lookups.
-- No column sizes (columnsize=0): nothing ranks by them, and skipping them saves a quarter of the build.
CREATE VIRTUAL TABLE captions_fts USING fts5(tokens, split, content='', columnsize=0);
)sql";

// Created after the bulk insert: building them once is faster than maintaining them.
const char* kIndexes = R"sql(
CREATE INDEX images_by_split ON images(split_id, cocoid);
CREATE INDEX images_by_split_length ON images(split_id, caption_length, cocoid);
CREATE INDEX images_by_length ON images(caption_length, cocoid);
CREATE INDEX captions_by_image ON captions(cocoid, position);
INSERT INTO captions_fts(rowid, tokens, split) SELECT c.id, c.tokens, s.name FROM captions c JOIN splits s ON s.id = c.split_id;
)sql";

void fsync_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

// db_path may be replaced only when it is nothing, an empty file or an index of
// ours (any version); anything else a user made is refused, naming what it is.
void check_replaceable(const std::string& db_path, const fs::path& target) {
  struct stat st {};
  if (::lstat(target.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw std::runtime_error("cannot write index '" + db_path + "': " + std::strerror(errno));
  }
  const auto refuse = [&](const std::string& what) {
    throw std::runtime_error("will not replace '" + db_path + "': it is " + what +
                             ", not a dataset index; choose another --db, or remove it yourself if it is not needed");
  };
  if (S_ISLNK(st.st_mode)) refuse("a symbolic link (an index is never written through a link: give the real path)");
  if (S_ISDIR(st.st_mode)) refuse("a folder");
  if (S_ISFIFO(st.st_mode)) refuse("a FIFO");
  if (!S_ISREG(st.st_mode)) refuse("a device or socket");
  if (st.st_size == 0) return;
  char magic[16] = {};
  std::ifstream(target, std::ios::binary).read(magic, sizeof(magic));
  if (std::memcmp(magic, "SQLite format 3", 16) != 0) refuse("a file that is not an SQLite database");
  const auto tables = sqlite::table_names(target.string());
  if (!tables) refuse("a damaged or unreadable SQLite database");
  const std::set<std::string> names(tables->begin(), tables->end());
  const auto has = [&](std::initializer_list<const char*> wanted) {
    return std::all_of(wanted.begin(), wanted.end(), [&](const char* t) { return names.count(t) > 0; });
  };
  if (has({"meta", "splits", "images", "captions"})) return;  // an index (a stale version is rebuilt)
  if (has({"runs"})) refuse("a run store");
  if (has({"evaluations", "samples"})) refuse("an evaluation store (expnet eval)");
  refuse("an SQLite database of another program");
}

// Every build holds an open-file-description lock on one byte of its temporary
// file, far past SQLite's own lock bytes (at 1 GiB), so the two never meet; a
// temporary whose byte is free, and which is not brand new, was left by a
// killed build.
constexpr off_t kBuilderLockByte = off_t{1} << 50;

bool lock_builder_byte(int fd) {
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = kBuilderLockByte;
  lock.l_len = 1;
  return ::fcntl(fd, F_OFD_SETLK, &lock) == 0;
}

void remove_stale_temporaries(const fs::path& target) {
  const std::string prefix = target.filename().string() + ".tmp-";
  std::error_code ec;
  for (fs::directory_iterator it(target.parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path path = it->path();
    const std::string name = path.filename().string();
    if (name.rfind(prefix, 0) != 0 || name.find_first_not_of("0123456789", prefix.size()) != std::string::npos) continue;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || std::time(nullptr) - st.st_mtime < 10) continue;
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) continue;
    if (lock_builder_byte(fd))
      for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path.string() + suffix, ec);
    ::close(fd);
  }
}

// Absolute form of a path; "" stands for the current folder.
std::string absolute(const std::string& path) {
  std::error_code ec;
  const fs::path result = fs::absolute(path.empty() ? fs::path(".") : fs::path(path), ec);
  return ec ? path : result.lexically_normal().string();
}

// Cancellation inside long statements (indexes, full-text fill): SQLite calls
// this every few thousand instructions; non-zero interrupts the statement.
int interrupt_when_cancelled(void* control) {
  const auto& c = *static_cast<const IndexBuildControl*>(control);
  return c.cancelled && c.cancelled() ? 1 : 0;
}

constexpr int64_t kCheckEvery = 256;      // images between cancellation checks (a few ms)
constexpr int64_t kProgressEvery = 2048;  // images between progress reports

}  // namespace

IndexWriter::IndexWriter(const std::string& db_path, const IndexOrigin& origin, const IndexBuildControl& control)
    : control_(control), start_(std::chrono::steady_clock::now()) {
  const fs::path target = fs::absolute(db_path);
  std::error_code ec;
  if (!fs::is_directory(target.parent_path(), ec))
    throw std::runtime_error("cannot write index '" + db_path + "': folder '" + target.parent_path().string() +
                             "' does not exist; create it or choose another --db");
  check_replaceable(db_path, target);
  remove_stale_temporaries(target);
  db_path_ = db_path;
  target_ = target.string();
  std::random_device rd;
  temp_ = target_ + ".tmp-" + std::to_string(rd());
  label_ = "index '" + temp_ + "'";
  temp_lock_ = ::open(temp_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (temp_lock_ < 0 || !lock_builder_byte(temp_lock_)) {
    const std::string reason = std::strerror(errno);
    if (temp_lock_ >= 0) ::close(temp_lock_);
    temp_lock_ = -1;
    throw std::runtime_error("cannot write index '" + db_path + "': cannot create '" + temp_ + "' (" + reason +
                             "); check the folder's permissions and free space");
  }
  try {
    db_ = sqlite::open(temp_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, label_);
    // A temporary file that is deleted on any failure needs no journal and no syncs.
    // 64 MB of page cache: COCO's build was fastest there (docs/performance.md, "Figures behind choices in the code").
    sqlite::exec(db_.get(), label_, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-64000;");
    sqlite::exec(db_.get(), label_, kSchema);
    sqlite::exec(db_.get(), label_, "BEGIN");
    sqlite::Statement meta(db_.get(), label_, "INSERT INTO meta(key, value) VALUES(?, ?)");
    const std::time_t now = std::time(nullptr);
    char created[32];
    std::strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
             {"version", std::to_string(kDatasetIndexVersion)}, {"source", absolute(origin.source)},
             {"format", format_name(origin.format)}, {"image_root", absolute(origin.image_root)}, {"created", created}})
      meta.bind(1, key).bind(2, value).run();
    image_ = std::make_unique<sqlite::Statement>(db_.get(), label_,
        "INSERT INTO images(cocoid, position, filepath, filename, split_id, width, height, caption_length) VALUES(?,?,?,?,?,?,?,?)");
    caption_ = std::make_unique<sqlite::Statement>(db_.get(), label_, "INSERT INTO captions(cocoid, position, split_id, raw, tokens) VALUES(?,?,?,?,?)");
  } catch (...) {
    remove_temp();
    throw;
  }
}

IndexWriter::~IndexWriter() {
  if (!finished_) remove_temp();
  if (temp_lock_ >= 0) ::close(temp_lock_);
}

void IndexWriter::remove_temp() {
  image_.reset();
  caption_.reset();
  db_.reset();
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(temp_ + suffix, ec);
}

void IndexWriter::check_cancelled() {
  if (control_.cancelled && control_.cancelled()) throw IndexBuildCancelled();
}

bool IndexWriter::add(const DatasetImage& image) {
  if (done_ % kCheckEvery == 0) check_cancelled();
  if (done_ % kProgressEvery == 0 && done_ > 0 && control_.progress) control_.progress(done_, std::max(total_, done_ + 1));
  const int split = static_cast<int>(image.split);
  size_t words = 0;
  for (const auto& caption : image.captions) words += caption.tokens.size();
  const double length = image.captions.empty() ? 0.0 : static_cast<double>(words) / static_cast<double>(image.captions.size());
  sqlite::Statement& row = *image_;
  row.bind(1, image.cocoid).bind(2, done_).bind(3, image.filepath).bind(4, image.filename).bind(5, int64_t{split});
  image.width > 0 ? row.bind(6, int64_t{image.width}) : row.bind_null(6);
  image.height > 0 ? row.bind(7, int64_t{image.height}) : row.bind_null(7);
  row.bind(8, length);
  try {
    row.run();
  } catch (const std::runtime_error&) {
    if (sqlite3_errcode(db_.get()) == SQLITE_CONSTRAINT) return false;  // the cocoid is taken
    throw;
  }
  auto& split_counts = per_split_[static_cast<size_t>(split)];
  ++split_counts.first;
  split_counts.second += static_cast<int64_t>(image.captions.size());
  const bool training = is_training_split(image.split);
  std::string tokens;
  for (size_t c = 0; c < image.captions.size(); ++c) {
    const Caption& caption = image.captions[c];
    tokens.clear();
    for (const auto& token : caption.tokens) {
      if (!tokens.empty()) tokens += ' ';
      tokens += token;
      auto& count = counts_[token];
      count.first += training;
      ++count.second;
    }
    caption_->bind(1, image.cocoid).bind(2, static_cast<int64_t>(c)).bind(3, int64_t{split}).bind(4, caption.raw).bind(5, tokens).run();
  }
  captions_ += static_cast<int64_t>(image.captions.size());
  ++done_;
  return true;
}

void IndexWriter::write_splits_and_words(IndexBuildReport& report) {
  sqlite::Statement split_row(db_.get(), label_, "INSERT INTO splits(id, name, images, captions) VALUES(?,?,?,?)");
  for (size_t id = 0; id < per_split_.size(); ++id)
    if (per_split_[id].first > 0)
      split_row.bind(1, static_cast<int64_t>(id)).bind(2, split_name(static_cast<Split>(id)))
          .bind(3, per_split_[id].first).bind(4, per_split_[id].second).run();
  // In key order: appending to a WITHOUT ROWID b-tree is its cheapest insert.
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> words(counts_.begin(), counts_.end());
  counts_.clear();
  std::sort(words.begin(), words.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  sqlite::Statement token(db_.get(), label_, "INSERT INTO tokens(word, train_count, total_count) VALUES(?,?,?)");
  for (const auto& [word, c] : words) token.bind(1, word).bind(2, c.first).bind(3, c.second).run();
  report.words = static_cast<int64_t>(words.size());
}

IndexBuildReport IndexWriter::finish() {
  check_cancelled();
  IndexBuildReport report;
  try {
    write_splits_and_words(report);
    image_.reset();
    caption_.reset();
    sqlite3_progress_handler(db_.get(), 20000, interrupt_when_cancelled, const_cast<IndexBuildControl*>(&control_));
    sqlite::exec(db_.get(), label_, kIndexes);
    sqlite::exec(db_.get(), label_, "COMMIT");
    sqlite3_progress_handler(db_.get(), 0, nullptr, nullptr);
    sqlite::exec(db_.get(), label_, "PRAGMA journal_mode=WAL");  // readers (the studio) and a thumbnail writer may share it
    if (sqlite3_close(db_.get()) != SQLITE_OK) throw std::runtime_error(label_ + ": cannot close: " + sqlite3_errmsg(db_.get()));
    (void)db_.release();  // closed just above
  } catch (const std::runtime_error&) {
    check_cancelled();  // an interrupted statement is a cancellation, not a failure
    throw;
  }
  check_cancelled();
  fsync_file(temp_);
  check_cancelled();  // the sync of a large file can take a while
  // What is at the target may have changed while the index was built.
  check_replaceable(db_path_, target_);
  // Stale WAL files of an older index at the target would be replayed into the new one.
  std::error_code ec;
  for (const char* suffix : {"-wal", "-shm"}) fs::remove(target_ + suffix, ec);
  fs::rename(temp_, target_, ec);
  if (ec) throw std::runtime_error("cannot move the new index to '" + target_ + "': " + ec.message() + "; check the folder's permissions");
  finished_ = true;
  fsync_file(fs::path(target_).parent_path().string());
  if (control_.progress) control_.progress(done_, std::max(total_, done_));
  report.images = done_;
  report.captions = captions_;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return report;
}

}  // namespace expnet
