// Opening, checking, backing up and migrating run store files (see run_store_schema.h).
#include "train/run_store_schema.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <mutex>
#include <regex>
#include <set>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "expnet/train/run_store.h"

namespace expnet {
namespace {

// Version 2 as a fresh store gets it. The columns version 2 added come last in
// their tables, where ALTER TABLE ADD COLUMN puts them, so fresh and migrated
// stores have the same layout. steps_speed serves list_runs' mean speed from
// the index alone, without a table lookup per step row (docs/performance.md, "Figures behind choices in the code").
const char* kSchemaV2 = R"sql(
CREATE TABLE IF NOT EXISTS runs(
  id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, status TEXT NOT NULL, config TEXT NOT NULL,
  out_dir TEXT NOT NULL, created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),
  notes TEXT NOT NULL DEFAULT '', tags TEXT NOT NULL DEFAULT '', error TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS stages(
  run INTEGER NOT NULL REFERENCES runs(id), idx INTEGER NOT NULL, name TEXT NOT NULL, config TEXT NOT NULL,
  PRIMARY KEY(run, idx));
CREATE TABLE IF NOT EXISTS steps(
  run INTEGER NOT NULL, stage INTEGER NOT NULL, epoch INTEGER NOT NULL, step INTEGER NOT NULL,
  loss REAL, lr REAL, grad_norm REAL, images_per_s REAL, skipped INTEGER NOT NULL DEFAULT 0, wall_s REAL,
  PRIMARY KEY(run, step));
CREATE TABLE IF NOT EXISTS validation(
  run INTEGER NOT NULL, stage INTEGER NOT NULL, epoch INTEGER NOT NULL, step INTEGER NOT NULL,
  bleu1 REAL, bleu2 REAL, bleu3 REAL, bleu4 REAL, rouge_l REAL, cider_d REAL,
  PRIMARY KEY(run, stage, epoch));
CREATE TABLE IF NOT EXISTS samples(
  run INTEGER NOT NULL, stage INTEGER NOT NULL, epoch INTEGER NOT NULL,
  image TEXT NOT NULL, caption TEXT NOT NULL, reference TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS samples_run ON samples(run, stage, epoch);
CREATE INDEX IF NOT EXISTS steps_speed ON steps(run, images_per_s);
CREATE TABLE IF NOT EXISTS run_stores(
  path TEXT PRIMARY KEY, added_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')));
PRAGMA user_version = 2;
)sql";

// kMigrations[v] takes a store from version v to v + 1 (version 1: the tables
// without a user_version, as expnet wrote them before versions existed).
const char* const kMigrations[] = {
    nullptr,
    R"sql(
ALTER TABLE runs ADD COLUMN notes TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN tags TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN error TEXT NOT NULL DEFAULT '';
ALTER TABLE steps ADD COLUMN wall_s REAL;
CREATE INDEX IF NOT EXISTS steps_speed ON steps(run, images_per_s);
CREATE TABLE IF NOT EXISTS run_stores(
  path TEXT PRIMARY KEY, added_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')));
PRAGMA user_version = 2;
)sql",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kRunStoreVersion, "one migration per older version");

enum class Problem { none, cannot_read, not_sqlite, damaged, foreign };

// What a read-only look at a file found.
struct Look {
  int version = 0;  // 0: no run tables yet (absent, empty)
  Problem problem = Problem::none;
  std::string reason;
};

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// A read-only SQLite connection opens WAL files by creating <path>-wal and
// <path>-shm and leaves them behind; when none of the journal files exists, no
// writer is active and the main file holds everything, so "immutable" reads it
// without them.
int open_read_only_raw(const std::string& path, sqlite3** db) {
  const bool side_files = exists(path + "-wal") || exists(path + "-shm") || exists(path + "-journal");
  const std::string uri = "file:" + sqlite::uri_escaped(path) + (side_files ? "?mode=ro" : "?mode=ro&immutable=1");
  const int rc = sqlite3_open_v2(uri.c_str(), db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (*db) sqlite3_busy_timeout(*db, 10000);
  return rc;
}

// Runs `sql` and collects the first column of every row; returns SQLite's code.
int collect(sqlite3* db, const char* sql, std::vector<std::string>& rows) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  while (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    rows.emplace_back(text ? text : "");
    rc = SQLITE_OK;
  }
  sqlite3_finalize(stmt);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

Problem problem_of(int rc) {
  const int primary = rc & 0xff;
  if (primary == SQLITE_NOTADB) return Problem::not_sqlite;
  if (primary == SQLITE_CORRUPT) return Problem::damaged;
  return Problem::cannot_read;
}

// quick_check reads the whole file (docs/performance.md, "Figures behind choices in the code"): a file this
// process found healthy is not checked again until its size or time changes,
// so the studio's twice-a-second reads stay cheap.
using FileIdentity = std::tuple<dev_t, ino_t, off_t, int64_t, int64_t>;
std::mutex g_checked_mutex;
std::set<FileIdentity> g_checked;

FileIdentity identity_of(const struct stat& st) {
  return {st.st_dev, st.st_ino, st.st_size, static_cast<int64_t>(st.st_mtim.tv_sec), static_cast<int64_t>(st.st_mtim.tv_nsec)};
}

Look look_at(const std::string& path, bool check_integrity) {
  Look look;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return look;
    look.problem = Problem::cannot_read;
    look.reason = std::strerror(errno);
    return look;
  }
  if (!S_ISREG(st.st_mode)) {  // SQLite would wait forever on a FIFO
    look.problem = Problem::cannot_read;
    look.reason = S_ISDIR(st.st_mode) ? "it is a folder, not a file: pass the runs.sqlite inside it"
                  : S_ISFIFO(st.st_mode) ? "it is a FIFO (named pipe), not a file"
                                         : "it is a device or socket, not a file";
    return look;
  }
  if (st.st_size == 0) return look;
  sqlite3* db = nullptr;
  int rc = open_read_only_raw(path, &db);
  std::vector<std::string> user_version, tables, check;
  if (rc == SQLITE_OK) rc = collect(db, "PRAGMA user_version", user_version);
  if (rc == SQLITE_OK) rc = collect(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", tables);
  bool checked = false;
  if (rc == SQLITE_OK && check_integrity) {
    std::lock_guard<std::mutex> lock(g_checked_mutex);
    checked = g_checked.count(identity_of(st)) > 0;
  }
  if (rc == SQLITE_OK && check_integrity && !checked) {
    rc = collect(db, "PRAGMA quick_check", check);
    if (rc == SQLITE_OK && (check.empty() || check.front() != "ok")) {
      look.problem = Problem::damaged;
      look.reason = check.empty() ? "quick_check found nothing to check" : check.front();
    } else if (rc == SQLITE_OK) {
      std::lock_guard<std::mutex> lock(g_checked_mutex);
      g_checked.insert(identity_of(st));
    }
  }
  if (rc != SQLITE_OK) {
    look.problem = problem_of(rc);
    // After a failed statement is finalised the connection may say "not an error": SQLite's text for the code then.
    const std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    look.reason = message == "not an error" ? sqlite3_errstr(rc) : message;
  }
  sqlite3_close(db);
  if (look.problem != Problem::none) return look;
  const int stated = user_version.empty() ? 0 : std::stoi(user_version.front());
  bool runs = false;
  std::string names;
  for (const auto& t : tables) {
    runs = runs || t == "runs";
    names += (names.empty() ? "" : ", ") + t;
  }
  if (stated > 0) {
    look.version = stated;
  } else if (runs) {
    look.version = 1;
  } else if (!tables.empty()) {
    look.problem = Problem::foreign;
    look.reason = names;
  }
  // Every version has had these: one missing is a damaged store, not one to add rows to.
  std::string missing;
  for (const char* table : {"runs", "stages", "steps", "validation", "samples"})
    if (look.version > 0 && std::find(tables.begin(), tables.end(), table) == tables.end())
      missing += (missing.empty() ? "" : ", ") + std::string(table);
  if (!missing.empty() && look.version <= kRunStoreVersion) {
    look.problem = Problem::damaged;
    look.reason = "schema " + std::to_string(look.version) + " but its tables " + missing + " are missing";
  }
  return look;
}

// The file as it is, untouched, unless it is a healthy store of a version this build reads.
void refuse_unusable(const std::string& label, const Look& look) {
  const std::string kept = "; it was not modified. ";
  switch (look.problem) {
    case Problem::none:
      break;
    case Problem::cannot_read:
      throw std::runtime_error(label + ": cannot read it (" + look.reason + ")" + kept +
                               "Check that it is a file you may read and write");
    case Problem::not_sqlite:
      throw std::runtime_error(label + ": not a SQLite database (" + look.reason + ")" + kept +
                               "Move it away or choose another file for the run store (--store)");
    case Problem::damaged:
      throw std::runtime_error(label + ": the database is damaged (" + look.reason + ")" + kept +
                               "Restore it from a copy (an upgrade leaves one beside it as <name>.v<N>.bak), "
                               "or move it away to start a new store");
    case Problem::foreign:
      throw std::runtime_error(label + ": a SQLite database but not a run store (its tables: " + look.reason + ")" +
                               kept + "Choose another file for the run store (--store)");
  }
  if (look.version > kRunStoreVersion)
    throw std::runtime_error(label + ": written by a newer expnet (schema " + std::to_string(look.version) +
                             "; this one reads up to " + std::to_string(kRunStoreVersion) + ")" + kept +
                             "Open it with that newer expnet, or choose another file for the run store");
}

bool has_column(sqlite3* db, const std::string& label, const std::string& table, const std::string& column) {
  sqlite::Statement s(db, label, "SELECT 1 FROM pragma_table_info(?) WHERE name = ?");
  s.bind(1, table).bind(2, column);
  return s.step();
}

// A migration's statements one by one. An ADD COLUMN whose column is there
// already (a store labelled older than its tables, as a copy or another tool
// may leave it) is skipped instead of failing on "duplicate column name".
void migrate(sqlite3* db, const std::string& label, const std::string& sql) {
  static const std::regex add_column(R"(ALTER\s+TABLE\s+(\w+)\s+ADD\s+COLUMN\s+(\w+))");
  size_t start = 0;
  while (start < sql.size()) {
    const size_t end = std::min(sql.find(';', start), sql.size());
    const std::string statement = sql.substr(start, end - start);
    start = end + 1;
    if (statement.find_first_not_of(" \n\t") == std::string::npos) continue;
    std::smatch m;
    if (std::regex_search(statement, m, add_column) && has_column(db, label, m[1].str(), m[2].str())) continue;
    sqlite::exec(db, label, statement);
  }
}

// The version as the read-write connection sees it (inside the migration's transaction).
int version_of(sqlite3* db, const std::string& label) {
  sqlite::Statement s(db, label, "PRAGMA user_version");
  const int stated = s.step() ? static_cast<int>(s.integer(0)) : 0;
  if (stated > 0) return stated;
  return has_table(db, label, "runs") ? 1 : 0;
}

// <path>.v<N>.bak (then .v<N>.1.bak, ...: an earlier copy is never replaced),
// made with VACUUM INTO so what only the -wal file holds is in the copy too.
void back_up(sqlite3* db, const std::string& label, const std::string& path, int version) {
  std::string copy;
  for (int k = 0;; ++k) {
    copy = path + ".v" + std::to_string(version) + (k > 0 ? "." + std::to_string(k) : "") + ".bak";
    const int fd = ::open(copy.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::close(fd);  // reserved; VACUUM INTO accepts an empty file
      break;
    }
    if (errno != EEXIST)
      throw std::runtime_error(label + ": cannot create '" + copy + "', the copy kept before upgrading it (" +
                               std::strerror(errno) + "); it was not modified. Make its folder writable");
  }
  try {
    sqlite::Statement s(db, label, "VACUUM INTO ?");
    s.bind(1, copy);
    s.run();
  } catch (const std::exception& e) {
    ::unlink(copy.c_str());
    throw std::runtime_error(std::string(e.what()) + " (copying it to '" + copy +
                             "' before upgrading it); it was not modified. Free some disk space and open it again");
  }
}

}  // namespace

std::string run_store_label(const std::string& path) { return "run store '" + path + "'"; }

bool has_table(sqlite3* db, const std::string& label, const std::string& table) {
  sqlite::Statement s(db, label, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
  s.bind(1, table);
  return s.step();
}

sqlite::Database open_run_store(const std::string& path) {
  const std::string label = run_store_label(path);
  const Look look = look_at(path, true);
  refuse_unusable(label, look);
  // A store this user may not write (chmod a-w, another user's file): read as it is, never migrated.
  if (look.version > 0 && ::access(path.c_str(), W_OK) != 0) {
    if (look.version < kRunStoreVersion)
      throw std::runtime_error(label + ": read-only, and of schema " + std::to_string(look.version) +
                               ", which must be upgraded before it is read; it was not modified. Make it writable "
                               "(chmod u+w '" + path + "') or copy it to a folder of yours and open the copy");
    return open_run_store_read_only(path);
  }
  sqlite::Database db = sqlite::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, label);
  const char* kJournal = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;";
  // A new store is made in WAL mode from its first write; an old one is copied before anything changes.
  if (look.version == 0) sqlite::exec(db.get(), label, kJournal);
  if (look.version < kRunStoreVersion) {
    if (look.version >= 1) back_up(db.get(), label, path, look.version);
    // Another process may have created or migrated it since the look: decide again under the write lock.
    sqlite::Transaction transaction(db.get(), label);
    const int version = version_of(db.get(), label);
    if (version > kRunStoreVersion) {
      Look now;
      now.version = version;
      refuse_unusable(label, now);
    }
    if (version == 0)
      sqlite::exec(db.get(), label, kSchemaV2);
    else
      for (int v = version; v < kRunStoreVersion; ++v) migrate(db.get(), label, kMigrations[v]);
    transaction.commit();
  }
  sqlite::exec(db.get(), label, kJournal);
  return db;
}

sqlite::Database open_run_store_read_only(const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc = open_read_only_raw(path, &raw);
  sqlite::Database db(raw);
  if (rc != SQLITE_OK)
    throw std::runtime_error(run_store_label(path) + ": cannot open it to read (" +
                             (raw ? sqlite3_errmsg(raw) : "out of memory") + "); check that it exists and is readable");
  return db;
}

int run_store_file_version(const std::string& path) {
  const Look look = look_at(path, false);
  switch (look.problem) {
    case Problem::none:
      return look.version;
    case Problem::foreign:
      return 0;
    default:
      return -1;
  }
}

}  // namespace expnet
