#include "system/sqlite_statement.h"

#include <sqlite3.h>

#include <cstring>
#include <stdexcept>

namespace expnet::sqlite {
namespace {

// SQLite's "disk I/O error" hides the reason a user can act on (a full disk,
// a file size limit): the system's own error is added when there is one.
std::string system_reason(sqlite3* db) {
  const int primary = sqlite3_extended_errcode(db) & 0xff;
  const int system = sqlite3_system_errno(db);
  if (primary != SQLITE_IOERR && primary != SQLITE_FULL) return "";
  // A write cut short by a full disk or `ulimit -f` leaves no errno behind.
  const std::string reason = system != 0 ? std::strerror(system) : "the disk may be full or a file size limit reached";
  return " (" + reason + "; free disk space or raise the file size limit (`ulimit -f`), then retry)";
}

}  // namespace

std::string uri_escaped(const std::string& path) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#' || c < 0x20 || c >= 0x7f) {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::optional<std::vector<std::string>> table_names(const std::string& path) {
  sqlite3* raw = nullptr;
  const std::string uri = "file:" + uri_escaped(path) + "?mode=ro&immutable=1";
  sqlite3_open_v2(uri.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  const Database db(raw);
  sqlite3_stmt* stmt = nullptr;
  if (!db || sqlite3_prepare_v2(db.get(), "SELECT name FROM sqlite_master WHERE type = 'table'", -1, &stmt, nullptr) !=
                 SQLITE_OK)
    return std::nullopt;
  std::vector<std::string> names;
  int rc = SQLITE_ROW;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
    names.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
  sqlite3_finalize(stmt);
  if (rc != SQLITE_DONE) return std::nullopt;
  return names;
}

void CloseDatabase::operator()(sqlite3* db) const { sqlite3_close(db); }

Database open(const std::string& path, int flags, const std::string& label) {
  // SQLite's Unix files take paths of at most 512 bytes (its MAX_PATHNAME), and
  // past that say only "unable to open database file".
  constexpr size_t kMaxPath = 512;
  if (path.size() >= kMaxPath)
    throw std::runtime_error(label + ": its path is " + std::to_string(path.size()) + " bytes; SQLite opens paths of " +
                             "fewer than " + std::to_string(kMaxPath) + ": choose a shorter folder");
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Database db(raw);
  if (rc != SQLITE_OK)
    throw std::runtime_error(label + ": cannot open (" + (raw ? sqlite3_errmsg(raw) : "out of memory") +
                             "); check that the folder exists and that the file is readable and writable");
  sqlite3_busy_timeout(db.get(), 10000);
  return db;
}

void exec(sqlite3* db, const std::string& label, const std::string& sql) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    const std::string text = (message ? std::string(message) : std::string(sqlite3_errmsg(db))) + system_reason(db);
    sqlite3_free(message);
    throw std::runtime_error(label + ": " + text);
  }
}

Statement::Statement(sqlite3* db, const std::string& label, const std::string& sql) : db_(db), label_(label) {
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) fail("cannot prepare a query");
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int i, int64_t v) { return check(sqlite3_bind_int64(stmt_, i, v)); }
Statement& Statement::bind(int i, double v) { return check(sqlite3_bind_double(stmt_, i, v)); }
Statement& Statement::bind(int i, const std::string& v) {
  return check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
}
Statement& Statement::bind_null(int i) { return check(sqlite3_bind_null(stmt_, i)); }
Statement& Statement::bind_blob(int i, const void* data, size_t size) {
  return check(sqlite3_bind_blob(stmt_, i, data, static_cast<int>(size), SQLITE_TRANSIENT));
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  fail("query failed");
}

void Statement::run() {
  step();
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int64_t Statement::integer(int column) const { return sqlite3_column_int64(stmt_, column); }
double Statement::real(int column) const { return sqlite3_column_double(stmt_, column); }
bool Statement::is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
std::string Statement::text(int column) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, column))) : std::string();
}

std::vector<unsigned char> Statement::blob(int column) const {
  const auto* p = static_cast<const unsigned char*>(sqlite3_column_blob(stmt_, column));
  return p ? std::vector<unsigned char>(p, p + sqlite3_column_bytes(stmt_, column)) : std::vector<unsigned char>();
}

Statement& Statement::check(int rc) {
  if (rc != SQLITE_OK) fail("cannot bind a value");
  return *this;
}

void Statement::fail(const std::string& what) const {
  throw std::runtime_error(label_ + ": " + what + ": " + sqlite3_errmsg(db_) + system_reason(db_));
}

Transaction::Transaction(sqlite3* db, const std::string& label) : db_(db), label_(label) {
  exec(db_, label_, "BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  exec(db_, label_, "COMMIT");
  done_ = true;
}

}  // namespace expnet::sqlite
