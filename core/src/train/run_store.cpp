// SQLite run store (see expnet/train/run_store.h). WAL journal and a busy timeout so
// one writer (the trainer) and any number of readers work at once.
#include "expnet/train/run_store.h"

#include <sqlite3.h>

#include <stdexcept>

#include "expnet/system/paths.h"

namespace expnet {
namespace {

const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS runs(
  id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, status TEXT NOT NULL, config TEXT NOT NULL,
  out_dir TEXT NOT NULL, created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')));
CREATE TABLE IF NOT EXISTS stages(
  run INTEGER NOT NULL REFERENCES runs(id), idx INTEGER NOT NULL, name TEXT NOT NULL, config TEXT NOT NULL,
  PRIMARY KEY(run, idx));
CREATE TABLE IF NOT EXISTS steps(
  run INTEGER NOT NULL, stage INTEGER NOT NULL, epoch INTEGER NOT NULL, step INTEGER NOT NULL,
  loss REAL, lr REAL, grad_norm REAL, images_per_s REAL, skipped INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY(run, step));
CREATE TABLE IF NOT EXISTS validation(
  run INTEGER NOT NULL, stage INTEGER NOT NULL, epoch INTEGER NOT NULL, step INTEGER NOT NULL,
  bleu1 REAL, bleu2 REAL, bleu3 REAL, bleu4 REAL, rouge_l REAL, cider_d REAL,
  PRIMARY KEY(run, stage, epoch));
CREATE TABLE IF NOT EXISTS samples(
  run INTEGER NOT NULL, stage INTEGER NOT NULL, epoch INTEGER NOT NULL,
  image TEXT NOT NULL, caption TEXT NOT NULL, reference TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS samples_run ON samples(run, stage, epoch);
)sql";

class Statement {
 public:
  Statement(sqlite3* db, const std::string& path, const char* sql) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) fail("cannot prepare query");
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement& bind(int i, int64_t v) { return check(sqlite3_bind_int64(stmt_, i, v)); }
  Statement& bind(int i, double v) { return check(sqlite3_bind_double(stmt_, i, v)); }
  Statement& bind(int i, const std::string& v) {
    return check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail("query failed");
    return false;
  }
  void run() {
    step();
    sqlite3_reset(stmt_);
  }
  int64_t integer(int c) const { return sqlite3_column_int64(stmt_, c); }
  double real(int c) const { return sqlite3_column_double(stmt_, c); }
  bool is_null(int c) const { return sqlite3_column_type(stmt_, c) == SQLITE_NULL; }
  std::string text(int c) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, c));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, c))) : std::string();
  }

 private:
  Statement& check(int rc) {
    if (rc != SQLITE_OK) fail("cannot bind a value");
    return *this;
  }
  [[noreturn]] void fail(const char* what) const {
    throw std::runtime_error("run store '" + path_ + "': " + what + ": " + sqlite3_errmsg(db_));
  }
  sqlite3* db_;
  std::string path_;
  sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace

struct RunStore::Impl {
  std::string path;
  sqlite3* db = nullptr;

  void exec(const char* sql) const {
    char* message = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
      const std::string text = message ? message : "unknown error";
      sqlite3_free(message);
      throw std::runtime_error("run store '" + path + "': " + text +
                               " (is it a run store? move it away or choose another file)");
    }
  }
};

RunStore::RunStore(const std::string& path) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  if (sqlite3_open_v2(path.c_str(), &impl_->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    const std::string reason = impl_->db ? sqlite3_errmsg(impl_->db) : "out of memory";
    sqlite3_close(impl_->db);
    throw std::runtime_error("run store '" + path + "': cannot open (" + reason +
                             "); check the folder exists and is writable");
  }
  sqlite3_busy_timeout(impl_->db, 10000);
  try {
    impl_->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    impl_->exec(kSchema);
  } catch (...) {
    sqlite3_close(impl_->db);
    throw;
  }
}

RunStore::~RunStore() { sqlite3_close(impl_->db); }

const std::string& RunStore::path() const { return impl_->path; }

int64_t RunStore::create_run(const std::string& name, const std::string& config_json, const std::string& out_dir) {
  if (find_run_by_name(name))
    throw std::runtime_error("run store '" + impl_->path + "': a run named '" + name +
                             "' exists already; use --resume to continue it or choose another name");
  Statement s(impl_->db, impl_->path, "INSERT INTO runs(name, status, config, out_dir) VALUES(?, 'created', ?, ?)");
  s.bind(1, name).bind(2, config_json).bind(3, out_dir).run();
  return sqlite3_last_insert_rowid(impl_->db);
}

namespace {
const char* kRunSelect =
    "SELECT r.id, r.name, r.status, r.config, r.out_dir, r.created_at, r.updated_at,"
    " (SELECT COUNT(*) FROM steps s WHERE s.run = r.id),"
    " (SELECT MAX(cider_d) FROM validation v WHERE v.run = r.id) FROM runs r ";

RunInfo read_run(const Statement& s) {
  RunInfo r;
  r.id = s.integer(0);
  r.name = s.text(1);
  r.status = s.text(2);
  r.config_json = s.text(3);
  r.out_dir = s.text(4);
  r.created_at = s.text(5);
  r.updated_at = s.text(6);
  r.steps = s.integer(7);
  if (!s.is_null(8)) r.best_cider = s.real(8);
  return r;
}
}  // namespace

std::optional<RunInfo> RunStore::find_run_by_name(const std::string& name) const {
  Statement s(impl_->db, impl_->path, (std::string(kRunSelect) + "WHERE r.name = ?").c_str());
  s.bind(1, name);
  if (!s.step()) return std::nullopt;
  return read_run(s);
}

RunInfo RunStore::find_run(const std::string& name_or_id) const {
  if (auto r = find_run_by_name(name_or_id)) return *r;
  if (!name_or_id.empty() && name_or_id.find_first_not_of("0123456789") == std::string::npos) {
    Statement s(impl_->db, impl_->path, (std::string(kRunSelect) + "WHERE r.id = ?").c_str());
    s.bind(1, static_cast<int64_t>(std::stoll(name_or_id)));
    if (s.step()) return read_run(s);
  }
  throw std::runtime_error("run store '" + impl_->path + "': no run named '" + name_or_id +
                           "' (see `expnet runs list`)");
}

std::vector<RunInfo> RunStore::list_runs() const {
  Statement s(impl_->db, impl_->path, (std::string(kRunSelect) + "ORDER BY r.id").c_str());
  std::vector<RunInfo> out;
  while (s.step()) out.push_back(read_run(s));
  return out;
}

void RunStore::set_status(int64_t run, const std::string& status) {
  Statement s(impl_->db, impl_->path,
              "UPDATE runs SET status = ?, updated_at = strftime('%Y-%m-%dT%H:%M:%SZ','now') WHERE id = ?");
  s.bind(1, status).bind(2, run).run();
}

void RunStore::add_stage(int64_t run, int64_t index, const std::string& name, const std::string& config_json) {
  Statement s(impl_->db, impl_->path, "INSERT OR REPLACE INTO stages(run, idx, name, config) VALUES(?, ?, ?, ?)");
  s.bind(1, run).bind(2, index).bind(3, name).bind(4, config_json).run();
}

void RunStore::log_step(const StepRecord& record) { log_steps({record}); }

void RunStore::log_steps(const std::vector<StepRecord>& records) {
  if (records.empty()) return;
  impl_->exec("BEGIN IMMEDIATE");
  try {
    Statement s(impl_->db, impl_->path,
                "INSERT OR REPLACE INTO steps(run, stage, epoch, step, loss, lr, grad_norm, images_per_s, skipped)"
                " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)");
    for (const auto& r : records) {
      s.bind(1, r.run).bind(2, r.stage).bind(3, r.epoch).bind(4, r.step).bind(5, r.loss).bind(6, r.lr);
      s.bind(7, r.grad_norm).bind(8, r.images_per_s).bind(9, static_cast<int64_t>(r.skipped)).run();
    }
    impl_->exec("COMMIT");
  } catch (...) {
    sqlite3_exec(impl_->db, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void RunStore::log_validation(const ValidationRecord& r) {
  Statement s(impl_->db, impl_->path,
              "INSERT OR REPLACE INTO validation(run, stage, epoch, step, bleu1, bleu2, bleu3, bleu4, rouge_l, cider_d)"
              " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  s.bind(1, r.run).bind(2, r.stage).bind(3, r.epoch).bind(4, r.step).bind(5, r.bleu1).bind(6, r.bleu2);
  s.bind(7, r.bleu3).bind(8, r.bleu4).bind(9, r.rouge_l).bind(10, r.cider_d).run();
  set_status(r.run, "running");
}

void RunStore::log_samples(const std::vector<SampleCaption>& samples) {
  impl_->exec("BEGIN IMMEDIATE");
  try {
    Statement s(impl_->db, impl_->path,
                "INSERT INTO samples(run, stage, epoch, image, caption, reference) VALUES(?, ?, ?, ?, ?, ?)");
    for (const auto& c : samples)
      s.bind(1, c.run).bind(2, c.stage).bind(3, c.epoch).bind(4, c.image).bind(5, c.caption).bind(6, c.reference).run();
    impl_->exec("COMMIT");
  } catch (...) {
    sqlite3_exec(impl_->db, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void RunStore::truncate_after(int64_t run, int64_t step) {
  Statement a(impl_->db, impl_->path, "DELETE FROM steps WHERE run = ? AND step > ?");
  a.bind(1, run).bind(2, step).run();
  Statement b(impl_->db, impl_->path, "DELETE FROM validation WHERE run = ? AND step > ?");
  b.bind(1, run).bind(2, step).run();
}

std::vector<StepRecord> RunStore::steps(int64_t run) const {
  Statement s(impl_->db, impl_->path,
              "SELECT run, stage, epoch, step, loss, lr, grad_norm, images_per_s, skipped FROM steps"
              " WHERE run = ? ORDER BY step");
  s.bind(1, run);
  std::vector<StepRecord> out;
  while (s.step())
    out.push_back({s.integer(0), s.integer(1), s.integer(2), s.integer(3), s.real(4), s.real(5), s.real(6), s.real(7),
                   s.integer(8) != 0});
  return out;
}

std::vector<ValidationRecord> RunStore::validations(int64_t run) const {
  Statement s(impl_->db, impl_->path,
              "SELECT run, stage, epoch, step, bleu1, bleu2, bleu3, bleu4, rouge_l, cider_d FROM validation"
              " WHERE run = ? ORDER BY stage, epoch");
  s.bind(1, run);
  std::vector<ValidationRecord> out;
  while (s.step())
    out.push_back({s.integer(0), s.integer(1), s.integer(2), s.integer(3), s.real(4), s.real(5), s.real(6), s.real(7),
                   s.real(8), s.real(9)});
  return out;
}

std::vector<SampleCaption> RunStore::samples(int64_t run) const {
  Statement s(impl_->db, impl_->path,
              "SELECT run, stage, epoch, image, caption, reference FROM samples WHERE run = ? ORDER BY rowid");
  s.bind(1, run);
  std::vector<SampleCaption> out;
  while (s.step()) out.push_back({s.integer(0), s.integer(1), s.integer(2), s.text(3), s.text(4), s.text(5)});
  return out;
}

std::vector<std::pair<int64_t, std::string>> RunStore::stages(int64_t run) const {
  Statement s(impl_->db, impl_->path, "SELECT idx, name FROM stages WHERE run = ? ORDER BY idx");
  s.bind(1, run);
  std::vector<std::pair<int64_t, std::string>> out;
  while (s.step()) out.emplace_back(s.integer(0), s.text(1));
  return out;
}

std::string default_run_store_path() { return ensure_dir(data_dir()) + "/runs.sqlite"; }

}  // namespace expnet
