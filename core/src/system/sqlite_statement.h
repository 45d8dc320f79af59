// RAII over SQLite's C API for the engine's SQLite files, with errors that name
// the file: a connection that closes itself, a prepared statement that finalises
// itself, exec and a transaction that rolls back unless committed. The
// evaluation store (core/src/metrics/), the dataset index (core/src/data/) and
// the run store (core/src/train/) use them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace expnet::sqlite {

struct CloseDatabase {
  void operator()(sqlite3* db) const;
};
using Database = std::unique_ptr<sqlite3, CloseDatabase>;

// Opens `path` with SQLite's open flags; throws "<label>: cannot open (<reason>)"
// and what to do. A busy timeout lets a reader and a writer share the file.
Database open(const std::string& path, int flags, const std::string& label);

// `path` as the body of a "file:" URI (SQLITE_OPEN_URI): %, ?, #, control and
// non-ASCII bytes percent-escaped, so any file name opens as itself.
std::string uri_escaped(const std::string& path);

// The tables of the SQLite file at `path`, read-only and immutable (nothing is
// written beside it, no journal replayed); nullopt when it is not a readable
// SQLite database. For telling our files (and others') apart before writing.
std::optional<std::vector<std::string>> table_names(const std::string& path);

// Runs `sql` (one or more statements); throws "<label>: <SQLite's reason>".
void exec(sqlite3* db, const std::string& label, const std::string& sql);

class Statement {
 public:
  // `label` starts every error, e.g. "evaluation store '/x/e.sqlite'".
  Statement(sqlite3* db, const std::string& label, const std::string& sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, int64_t v);
  Statement& bind(int i, double v);
  Statement& bind(int i, const std::string& v);
  Statement& bind_null(int i);
  Statement& bind_blob(int i, const void* data, size_t size);
  bool step();  // true while there is a row
  void run();   // steps once, then resets and clears the bindings for the next run
  int64_t integer(int column) const;
  double real(int column) const;
  bool is_null(int column) const;
  std::string text(int column) const;
  std::vector<unsigned char> blob(int column) const;

 private:
  Statement& check(int rc);
  [[noreturn]] void fail(const std::string& what) const;
  sqlite3* db_;
  std::string label_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE (the write lock at once, so two writers wait on the busy
// timeout instead of failing mid-transaction); rolled back when destroyed
// without commit().
class Transaction {
 public:
  Transaction(sqlite3* db, const std::string& label);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  sqlite3* db_;
  std::string label_;
  bool done_ = false;
};

}  // namespace expnet::sqlite
