// SQLite run store (see expnet/train/run_store.h). WAL journal and a busy timeout so
// one writer (the trainer) and any number of readers work at once. Opening,
// checking and migrating the file: run_store_schema.cpp.
#include "expnet/train/run_store.h"

#include <sqlite3.h>

#include <filesystem>
#include <limits>
#include <stdexcept>

#include "expnet/system/paths.h"
#include "system/sqlite_statement.h"
#include "train/run_store_schema.h"

namespace expnet {

using sqlite::Statement;

struct RunStore::Impl {
  std::string path, label;  // label: "run store '<path>'", how every error starts
  sqlite::Database db;

  // For updates of one run's row: an id that matches no run is the caller's mistake, said so.
  void require_changed(int64_t run) const {
    if (sqlite3_changes(db.get()) == 0)
      throw std::runtime_error(label + ": no run with id " + std::to_string(run) + " (see `expnet runs list`)");
  }
};

RunStore::RunStore(const std::string& path, Open mode) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->label = run_store_label(path);
  if (mode != Open::create) {
    std::error_code error;
    const auto kind = std::filesystem::status(path, error).type();
    if (kind == std::filesystem::file_type::not_found)
      throw std::runtime_error(impl_->label + " does not exist (moved or deleted?): pass a runs.sqlite file (a run "
                               "folder has one)");
    if (kind == std::filesystem::file_type::directory)
      throw std::runtime_error(impl_->label + " is a folder, not a file: pass the runs.sqlite file inside it");
    if (kind != std::filesystem::file_type::regular)
      throw std::runtime_error(impl_->label + " is " + (kind == std::filesystem::file_type::fifo ? "a FIFO (named pipe)" : "not a regular file") +
                               ": pass a runs.sqlite file (a run folder has one)");
    if (std::filesystem::file_size(path, error) == 0)
      throw std::runtime_error(impl_->label + " is empty (0 bytes): it holds no runs; a trainer (`expnet train "
                               "--store FILE`) makes it a run store");
  }
  impl_->db = mode == Open::read_only && run_store_file_version(path) == kRunStoreVersion
                  ? open_run_store_read_only(path)
                  : open_run_store(path);
}

RunStore::~RunStore() = default;

const std::string& RunStore::path() const { return impl_->path; }

int64_t RunStore::create_run(const std::string& name, const std::string& config_json, const std::string& out_dir) {
  if (find_run_by_name(name))
    throw std::runtime_error(impl_->label + ": a run named '" + name +
                             "' exists already; use --resume to continue it or choose another name");
  Statement s(impl_->db.get(), impl_->label, "INSERT INTO runs(name, status, config, out_dir) VALUES(?, 'created', ?, ?)");
  s.bind(1, name).bind(2, config_json).bind(3, out_dir).run();
  return sqlite3_last_insert_rowid(impl_->db.get());
}

namespace {

// One row per run; each figure is a correlated subquery over the run's own
// rows, served by an index: COUNT and the speed's mean by steps_speed
// (run, images_per_s), MAX(step) and the last step's wall_s by the primary key
// (run, step), validation by its primary key. A tie for the best CIDEr-D goes
// to the earliest step.
const char* kRunSelect =
    "SELECT r.id, r.name, r.status, r.config, r.out_dir, r.created_at, r.updated_at, r.notes, r.tags, r.error,"
    " (SELECT COUNT(*) FROM steps s WHERE s.run = r.id),"
    " (SELECT MAX(s.step) FROM steps s WHERE s.run = r.id),"
    " (SELECT AVG(s.images_per_s) FROM steps s WHERE s.run = r.id AND s.images_per_s > 0),"
    " (SELECT s.wall_s FROM steps s WHERE s.run = r.id ORDER BY s.step DESC LIMIT 1),"
    " (SELECT MAX(v.cider_d) FROM validation v WHERE v.run = r.id),"
    " (SELECT v.stage FROM validation v WHERE v.run = r.id AND v.cider_d IS NOT NULL"
    "   ORDER BY v.cider_d DESC, v.step, v.stage, v.epoch LIMIT 1),"
    " (SELECT v.epoch FROM validation v WHERE v.run = r.id AND v.cider_d IS NOT NULL"
    "   ORDER BY v.cider_d DESC, v.step, v.stage, v.epoch LIMIT 1)"
    " FROM runs r ";

RunInfo read_run(const Statement& s) {
  RunInfo r;
  r.id = s.integer(0);
  r.name = s.text(1);
  r.status = s.text(2);
  r.config_json = s.text(3);
  r.out_dir = s.text(4);
  r.created_at = s.text(5);
  r.updated_at = s.text(6);
  r.notes = s.text(7);
  r.tags = s.text(8);
  r.error = s.text(9);
  r.steps = s.integer(10);
  r.last_step = s.integer(11);     // NULL (no steps) reads as 0
  r.images_per_s = s.real(12);
  r.wall_s = s.real(13);           // NULL: a step logged by a version 1 store
  if (!s.is_null(14)) r.best_cider = s.real(14);
  r.best_stage = s.integer(15);
  r.best_epoch = s.integer(16);
  return r;
}

}  // namespace

std::optional<RunInfo> RunStore::find_run_by_name(const std::string& name) const {
  Statement s(impl_->db.get(), impl_->label, std::string(kRunSelect) + "WHERE r.name = ?");
  s.bind(1, name);
  if (!s.step()) return std::nullopt;
  return read_run(s);
}

RunInfo RunStore::find_run(const std::string& name_or_id) const {
  if (auto r = find_run_by_name(name_or_id)) return *r;
  if (!name_or_id.empty() && name_or_id.size() < 19 && name_or_id.find_first_not_of("0123456789") == std::string::npos) {
    Statement s(impl_->db.get(), impl_->label, std::string(kRunSelect) + "WHERE r.id = ?");
    s.bind(1, static_cast<int64_t>(std::stoll(name_or_id)));
    if (s.step()) return read_run(s);
  }
  throw std::runtime_error(impl_->label + ": no run named '" + name_or_id + "' (see `expnet runs list`)");
}

std::vector<RunInfo> RunStore::list_runs() const {
  Statement s(impl_->db.get(), impl_->label, std::string(kRunSelect) + "ORDER BY r.id");
  std::vector<RunInfo> out;
  while (s.step()) out.push_back(read_run(s));
  return out;
}

void RunStore::set_status(int64_t run, const std::string& status, const std::string& error) {
  Statement s(impl_->db.get(), impl_->label,
              "UPDATE runs SET status = ?, error = ?, updated_at = strftime('%Y-%m-%dT%H:%M:%SZ','now') WHERE id = ?");
  s.bind(1, status).bind(2, status == "failed" ? error : std::string()).bind(3, run).run();
}

// The user's notes, tags and name leave updated_at alone: it tells when training last wrote.
void RunStore::set_notes(int64_t run, const std::string& notes) {
  Statement s(impl_->db.get(), impl_->label, "UPDATE runs SET notes = ? WHERE id = ?");
  s.bind(1, notes).bind(2, run).run();
  impl_->require_changed(run);
}

void RunStore::set_tags(int64_t run, const std::string& tags) {
  Statement s(impl_->db.get(), impl_->label, "UPDATE runs SET tags = ? WHERE id = ?");
  s.bind(1, tags).bind(2, run).run();
  impl_->require_changed(run);
}

void RunStore::rename_run(int64_t run, const std::string& new_name) {
  if (new_name.empty()) throw std::runtime_error(impl_->label + ": a run's name cannot be empty; type a name");
  sqlite::Transaction transaction(impl_->db.get(), impl_->label);
  Statement other(impl_->db.get(), impl_->label, "SELECT id FROM runs WHERE name = ? AND id != ?");
  other.bind(1, new_name).bind(2, run);
  if (other.step())
    throw std::runtime_error(impl_->label + ": the name '" + new_name + "' is taken by run " +
                             std::to_string(other.integer(0)) + "; choose another name");
  Statement s(impl_->db.get(), impl_->label, "UPDATE runs SET name = ? WHERE id = ?");
  s.bind(1, new_name).bind(2, run).run();
  impl_->require_changed(run);
  transaction.commit();
}

void RunStore::add_stage(int64_t run, int64_t index, const std::string& name, const std::string& config_json) {
  Statement s(impl_->db.get(), impl_->label, "INSERT OR REPLACE INTO stages(run, idx, name, config) VALUES(?, ?, ?, ?)");
  s.bind(1, run).bind(2, index).bind(3, name).bind(4, config_json).run();
}

void RunStore::log_step(const StepRecord& record) { log_steps({record}); }

void RunStore::log_steps(const std::vector<StepRecord>& records) {
  if (records.empty()) return;
  sqlite::Transaction transaction(impl_->db.get(), impl_->label);
  Statement s(impl_->db.get(), impl_->label,
              "INSERT OR REPLACE INTO steps(run, stage, epoch, step, loss, lr, grad_norm, images_per_s, skipped, wall_s)"
              " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (const auto& r : records) {
    s.bind(1, r.run).bind(2, r.stage).bind(3, r.epoch).bind(4, r.step).bind(5, r.loss).bind(6, r.lr);
    s.bind(7, r.grad_norm).bind(8, r.images_per_s).bind(9, static_cast<int64_t>(r.skipped)).bind(10, r.wall_s).run();
  }
  transaction.commit();
}

void RunStore::log_validation(const ValidationRecord& r) {
  Statement s(impl_->db.get(), impl_->label,
              "INSERT OR REPLACE INTO validation(run, stage, epoch, step, bleu1, bleu2, bleu3, bleu4, rouge_l, cider_d)"
              " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  s.bind(1, r.run).bind(2, r.stage).bind(3, r.epoch).bind(4, r.step).bind(5, r.bleu1).bind(6, r.bleu2);
  s.bind(7, r.bleu3).bind(8, r.bleu4).bind(9, r.rouge_l).bind(10, r.cider_d).run();
  set_status(r.run, "running");
}

void RunStore::log_samples(const std::vector<SampleCaption>& samples) {
  sqlite::Transaction transaction(impl_->db.get(), impl_->label);
  Statement s(impl_->db.get(), impl_->label,
              "INSERT INTO samples(run, stage, epoch, image, caption, reference) VALUES(?, ?, ?, ?, ?, ?)");
  for (const auto& c : samples)
    s.bind(1, c.run).bind(2, c.stage).bind(3, c.epoch).bind(4, c.image).bind(5, c.caption).bind(6, c.reference).run();
  transaction.commit();
}

void RunStore::truncate_after(int64_t run, int64_t step) {
  sqlite::Transaction transaction(impl_->db.get(), impl_->label);
  Statement a(impl_->db.get(), impl_->label, "DELETE FROM steps WHERE run = ? AND step > ?");
  a.bind(1, run).bind(2, step).run();
  Statement b(impl_->db.get(), impl_->label, "DELETE FROM validation WHERE run = ? AND step > ?");
  b.bind(1, run).bind(2, step).run();
  transaction.commit();
}

namespace {
// The rows a query about one run returns, each made by `read`.
template <typename Row, typename Read>
std::vector<Row> run_rows(sqlite3* db, const std::string& label, const char* sql, int64_t run, Read read) {
  Statement s(db, label, sql);
  s.bind(1, run);
  std::vector<Row> out;
  while (s.step()) out.push_back(read(s));
  return out;
}
}  // namespace

std::vector<StepRecord> RunStore::steps(int64_t run) const {
  return run_rows<StepRecord>(
      impl_->db.get(), impl_->label,
      "SELECT run, stage, epoch, step, loss, lr, grad_norm, images_per_s, skipped, wall_s FROM steps"
      " WHERE run = ? ORDER BY step",
      run, [](const Statement& s) {
        // SQLite keeps a NaN as NULL: a skipped step's non-finite loss reads back as NaN, not as 0.
        const auto real_or_nan = [&s](int c) { return s.is_null(c) ? std::numeric_limits<double>::quiet_NaN() : s.real(c); };
        return StepRecord{s.integer(0), s.integer(1), s.integer(2), s.integer(3), real_or_nan(4), s.real(5),
                          real_or_nan(6), s.real(7), s.integer(8) != 0, s.real(9)};
      });
}

std::vector<ValidationRecord> RunStore::validations(int64_t run) const {
  const char* sql =
      "SELECT run, stage, epoch, step, bleu1, bleu2, bleu3, bleu4, rouge_l, cider_d FROM validation"
      " WHERE run = ? ORDER BY stage, epoch";
  return run_rows<ValidationRecord>(impl_->db.get(), impl_->label, sql, run, [](const Statement& s) {
    return ValidationRecord{s.integer(0), s.integer(1), s.integer(2), s.integer(3), s.real(4),
                            s.real(5),    s.real(6),    s.real(7),    s.real(8),    s.real(9)};
  });
}

std::vector<SampleCaption> RunStore::samples(int64_t run) const {
  return run_rows<SampleCaption>(
      impl_->db.get(), impl_->label,
      "SELECT run, stage, epoch, image, caption, reference FROM samples WHERE run = ? ORDER BY rowid", run,
      [](const Statement& s) {
        return SampleCaption{s.integer(0), s.integer(1), s.integer(2), s.text(3), s.text(4), s.text(5)};
      });
}

std::vector<std::pair<int64_t, std::string>> RunStore::stages(int64_t run) const {
  return run_rows<std::pair<int64_t, std::string>>(
      impl_->db.get(), impl_->label, "SELECT idx, name FROM stages WHERE run = ? ORDER BY idx", run,
      [](const Statement& s) { return std::make_pair(s.integer(0), s.text(1)); });
}

std::string default_run_store_path() { return ensure_dir(data_dir()) + "/runs.sqlite"; }

}  // namespace expnet
