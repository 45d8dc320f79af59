// Trash for runs (see expnet/train/run_trash.h). Every step copies before it
// deletes, so an error or a crash at any point leaves the run complete in one
// place or both: rows are copied into the trash's store and committed before
// they are deleted from theirs, and a folder is renamed (or copied whole, then
// removed) in one piece.
#include "expnet/train/run_trash.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <vector>

#include "expnet/system/atomic_file.h"
#include "expnet/system/paths.h"
#include "expnet/train/run_lock.h"
#include "expnet/train/run_registry.h"
#include "expnet/train/run_store.h"
#include "system/sqlite_statement.h"
#include "train/run_store_schema.h"

namespace fs = std::filesystem;

namespace expnet {
namespace {

const char* kManifest = "trash.json";
const char* kTrashStore = "runs.sqlite";
const char* kTrashFolder = "folder";

// A run's rows besides its runs row: table and the columns after `run`.
struct RunTable {
  const char* name;
  const char* columns;
};
const RunTable kRunTables[] = {
    {"stages", "idx, name, config"},
    {"steps", "stage, epoch, step, loss, lr, grad_norm, images_per_s, skipped, wall_s"},
    {"validation", "stage, epoch, step, bleu1, bleu2, bleu3, bleu4, rouge_l, cider_d"},
    {"samples", "stage, epoch, image, caption, reference"},
};

std::string canonical(const std::string& path) {
  std::error_code error;
  fs::path out = fs::weakly_canonical(fs::absolute(path), error);
  if (error) out = fs::absolute(path).lexically_normal();
  if (out.filename().empty()) out = out.parent_path();  // "a/b/" names a/b
  return out.string();
}

bool within(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i)
    if (i == inner.end() || *i != *o) return false;
  return true;
}

std::string utc_now(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[64] = {};
  std::strftime(text, sizeof(text), format, &tm);
  return text;
}

std::string this_host() {
  char name[256] = {};
  return ::gethostname(name, sizeof(name) - 1) == 0 ? std::string(name) : std::string();
}

// "run 'x' is running (pid N): stop it first", from what the trainer wrote in its lock file.
[[noreturn]] void refuse_running(const std::string& store, const RunInfo& run) {
  std::ifstream in(run_lock_path(store, run.id));
  long long pid = 0;
  std::string host;
  std::string who = "by another process";
  if (in >> pid >> host && pid > 0)
    who = "pid " + std::to_string(pid) + (host == this_host() ? "" : " on " + host);
  throw std::runtime_error("run '" + run.name + "' is running (" + who + "): stop it first");
}

// A whole folder to a new place: rename, or across file systems a full copy
// before the original is removed.
void move_tree(const std::string& from, const std::string& to) {
  std::error_code error;
  fs::rename(from, to, error);
  if (!error) return;
  if (error != std::errc::cross_device_link)
    throw std::runtime_error("cannot move folder '" + from + "' to '" + to + "': " + error.message());
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::copy_symlinks, error);
  if (error) {
    std::error_code ignored;
    fs::remove_all(to, ignored);
    throw std::runtime_error("cannot copy folder '" + from + "' to '" + to + "': " + error.message() +
                             " (free some space on the destination's disk)");
  }
  fs::remove_all(from, error);
  if (error) spdlog::warn("folder '{}' was copied to '{}' but not all of it could be removed: {}", from, to, error.message());
}

void attach(sqlite3* db, const std::string& label, const std::string& path, const std::string& schema) {
  sqlite::Statement s(db, label, "ATTACH DATABASE ? AS " + schema);
  s.bind(1, path).run();
}

// The run's rows from schema `from` (id `from_id`) into schema `to` as run
// `to_id`, in the caller's transaction; samples keep their order.
void copy_run_rows(sqlite3* db, const std::string& label, const std::string& from, const std::string& to,
                   int64_t from_id, int64_t to_id) {
  const std::string run_columns = "name, status, config, out_dir, created_at, updated_at, notes, tags, error";
  sqlite::Statement run(db, label,
                        "INSERT INTO " + to + ".runs(id, " + run_columns + ") SELECT ?, " + run_columns + " FROM " +
                            from + ".runs WHERE id = ?");
  run.bind(1, to_id).bind(2, from_id).run();
  for (const auto& table : kRunTables) {
    const std::string columns = table.columns;
    sqlite::Statement rows(db, label,
                           "INSERT INTO " + to + "." + table.name + "(run, " + columns + ") SELECT ?, " + columns +
                               " FROM " + from + "." + table.name + " WHERE run = ? ORDER BY rowid");
    rows.bind(1, to_id).bind(2, from_id).run();
  }
}

void delete_run_rows(sqlite3* db, const std::string& label, int64_t id) {
  for (const auto& table : kRunTables) {
    sqlite::Statement rows(db, label, std::string("DELETE FROM ") + table.name + " WHERE run = ?");
    rows.bind(1, id).run();
  }
  sqlite::Statement run(db, label, "DELETE FROM runs WHERE id = ?");
  run.bind(1, id).run();
}

// Puts the run held in `from_store` (by name) into `to_store` (created when
// absent) in one transaction: its own id when free there, else the next one.
// Throws, changing nothing, when `to_store` has a run of that name.
void copy_run_between(const std::string& from_store, const std::string& name, const std::string& to_store) {
  int64_t from_id = 0;
  {
    RunStore from(from_store);  // checks the file and its version before it is attached
    from_id = from.find_run(name).id;
  }
  auto db = open_run_store(to_store);
  const std::string label = run_store_label(to_store);
  sqlite::exec(db.get(), label, "PRAGMA synchronous=FULL");  // on the disk before the caller deletes the original
  attach(db.get(), label, from_store, "source");
  {
    sqlite::Transaction transaction(db.get(), label);
    sqlite::Statement taken(db.get(), label, "SELECT id FROM main.runs WHERE name = ?");
    taken.bind(1, name);
    if (taken.step())
      throw std::runtime_error(label + " has a run named '" + name + "' (id " + std::to_string(taken.integer(0)) +
                               "): rename that run, then restore this one");
    sqlite::Statement used(db.get(), label, "SELECT 1 FROM main.runs WHERE id = ?");
    used.bind(1, from_id);
    int64_t to_id = from_id;
    if (used.step()) {
      sqlite::Statement next(db.get(), label, "SELECT COALESCE(MAX(id), 0) + 1 FROM main.runs");
      next.step();
      to_id = next.integer(0);
    }
    copy_run_rows(db.get(), label, "source", "main", from_id, to_id);
    transaction.commit();
  }
  sqlite::exec(db.get(), label, "DETACH DATABASE source");
}

void write_manifest(const TrashedRun& t, const std::string& trashed_at) {
  const nlohmann::json manifest = {{"store_path", t.store_path}, {"run_name", t.run_name},
                                   {"out_dir", t.out_dir},       {"moved_folder", t.moved_folder},
                                   {"trashed_at", trashed_at}};
  write_file_atomic(t.trash_dir + "/" + kManifest, manifest.dump(2) + "\n");
}

// <trash>/<UTC time>-<name>[-k], the name reduced to what any file system takes.
std::string make_trash_dir(const std::string& run_name) {
  std::string safe;
  for (char c : run_name.substr(0, 80))
    safe += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  const std::string base = canonical(trash_root()) + "/" + utc_now("%Y%m%dT%H%M%SZ") + "-" + safe;
  for (int k = 0;; ++k) {
    const std::string dir = k == 0 ? base : base + "-" + std::to_string(k);
    std::error_code error;
    if (fs::create_directory(dir, error)) return dir;
    if (error) throw std::runtime_error("cannot create trash folder '" + dir + "': " + error.message());
  }
}

// Moving a folder must never take along what is not the run's: expnet's data
// folder (the default store, the trash), the home folder, or another run's
// store or folder.
void require_folder_is_the_runs_own(const std::string& folder, const std::string& store, const RunInfo& run,
                                    const std::vector<RunInfo>& others) {
  const std::string refused = "run '" + run.name + "': its folder '" + folder + "' was not moved to the trash and nothing was changed: ";
  const std::string data = canonical(data_dir());
  if (within(data, folder)) throw std::runtime_error(refused + "it holds expnet's data folder '" + data + "'");
  const char* home = std::getenv("HOME");
  if (home && *home && within(canonical(home), folder))
    throw std::runtime_error(refused + "it holds the home folder '" + canonical(home) + "'");
  if (within(store, folder) && !others.empty())
    throw std::runtime_error(refused + "it holds run store '" + store + "', which has other runs too (e.g. '" +
                             others.front().name + "'); trash those first, or move the store out of the folder");
  for (const auto& other : others)
    if (!other.out_dir.empty() && within(canonical(other.out_dir), folder))
      throw std::runtime_error(refused + "it holds the folder of run '" + other.name + "' too");
}

}  // namespace

std::string trash_root() { return ensure_dir(data_dir() + "/trash"); }

TrashedRun trash_run(const std::string& store_path, const std::string& run_name_or_id) {
  const std::string store = canonical(store_path);
  if (!fs::is_regular_file(store))
    throw std::runtime_error(run_store_label(store) + " does not exist: nothing to trash (see `expnet runs list`)");
  RunInfo run;
  std::vector<RunInfo> others;
  {
    RunStore source(store);
    run = source.find_run(run_name_or_id);
    for (auto& other : source.list_runs())
      if (other.id != run.id) others.push_back(std::move(other));
  }
  if (run_is_live(store, run.id)) refuse_running(store, run);
  const std::string folder = run.out_dir.empty() ? std::string() : canonical(run.out_dir);
  const bool has_folder = !folder.empty() && fs::is_directory(folder);
  if (has_folder) require_folder_is_the_runs_own(folder, store, run, others);
  // Held while the rows move, so no trainer resumes the run meanwhile.
  std::unique_ptr<RunLock> lock;
  try {
    lock = std::make_unique<RunLock>(store, run.id);
  } catch (const std::runtime_error&) {
    refuse_running(store, run);
  }

  TrashedRun t;
  t.store_path = store;
  t.run_name = run.name;
  t.out_dir = has_folder ? folder : std::string();
  t.trash_dir = make_trash_dir(run.name);
  const std::string trashed_at = utc_now("%Y-%m-%dT%H:%M:%SZ");
  try {
    write_manifest(t, trashed_at);
    copy_run_between(store, run.name, t.trash_dir + "/" + kTrashStore);
    auto db = open_run_store(store);
    sqlite::Transaction transaction(db.get(), run_store_label(store));
    delete_run_rows(db.get(), run_store_label(store), run.id);
    transaction.commit();
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(t.trash_dir, ignored);  // the rows are still (or again) in their store
    throw;
  }
  lock.reset();  // every connection is closed too: the folder (often with the store in it) can move

  if (has_folder) {
    try {
      move_tree(folder, t.trash_dir + "/" + kTrashFolder);
    } catch (const std::exception& e) {
      try {
        copy_run_between(t.trash_dir + "/" + kTrashStore, run.name, store);
      } catch (const std::exception& back) {
        throw std::runtime_error(std::string(e.what()) + "; the run's rows are kept in '" + t.trash_dir +
                                 "' (restore it from there) since putting them back failed: " + back.what());
      }
      std::error_code ignored;
      fs::remove_all(t.trash_dir, ignored);
      throw std::runtime_error(std::string(e.what()) + "; run '" + run.name + "' was left as it was");
    }
    t.moved_folder = true;
    write_manifest(t, trashed_at);
  }
  std::error_code error;
  if (!fs::exists(store, error)) {
    try {
      forget_run_store(store);  // it moved with the folder: not "missing" in the registry
    } catch (const std::exception& e) {
      spdlog::warn("{}", e.what());
    }
  }
  return t;
}

TrashedRun read_trashed_run(const std::string& trash_dir) {
  const std::string manifest_path = trash_dir + "/" + kManifest;
  std::ifstream in(manifest_path);
  if (!in)
    throw std::runtime_error("trash folder '" + trash_dir + "' has no " + kManifest +
                             ": it is not a trashed run (or it was restored already)");
  const auto manifest = nlohmann::json::parse(in, nullptr, false);
  if (manifest.is_discarded() || !manifest.is_object() || !manifest.contains("store_path") ||
      !manifest.contains("run_name"))
    throw std::runtime_error("'" + manifest_path + "' is not a trash manifest (store_path and run_name are needed)");
  TrashedRun t;
  t.trash_dir = canonical(trash_dir);
  t.store_path = manifest.at("store_path").get<std::string>();
  t.run_name = manifest.at("run_name").get<std::string>();
  t.out_dir = manifest.value("out_dir", std::string());
  // The folder itself is the truth: a trash interrupted between moving it and
  // rewriting the manifest still restores it.
  std::error_code error;
  t.moved_folder = manifest.value("moved_folder", false) || fs::is_directory(t.trash_dir + "/" + kTrashFolder, error);
  return t;
}

void restore_run(const TrashedRun& t) {
  const std::string trash_store = t.trash_dir + "/" + kTrashStore;
  const std::string trash_folder = t.trash_dir + "/" + kTrashFolder;
  const std::string refused = "cannot restore run '" + t.run_name + "' from '" + t.trash_dir + "': ";
  if (!fs::is_regular_file(trash_store)) throw std::runtime_error(refused + "it has no " + kTrashStore);
  const bool folder_back = t.moved_folder && !t.out_dir.empty();
  std::error_code error;
  if (folder_back && !fs::is_directory(trash_folder, error))
    throw std::runtime_error(refused + "the run's folder is missing from it ('" + trash_folder + "')");
  if (folder_back && fs::exists(fs::symlink_status(t.out_dir, error)))
    throw std::runtime_error(refused + "the place of its folder, '" + t.out_dir + "', is occupied; move that away first");
  if (fs::is_regular_file(t.store_path, error)) {
    RunStore store(t.store_path);
    if (auto other = store.find_run_by_name(t.run_name))
      throw std::runtime_error(refused + run_store_label(t.store_path) + " has a run named '" + t.run_name + "' (id " +
                               std::to_string(other->id) + "): rename that run, then restore this one");
  }

  if (folder_back) {
    fs::create_directories(fs::path(t.out_dir).parent_path(), error);
    move_tree(trash_folder, t.out_dir);
  }
  fs::create_directories(fs::path(t.store_path).parent_path(), error);  // a store whose folder was removed meanwhile
  try {
    copy_run_between(trash_store, t.run_name, t.store_path);
  } catch (...) {
    if (folder_back) {
      try {
        move_tree(t.out_dir, trash_folder);  // the trash as it was
      } catch (const std::exception& e) {
        spdlog::warn("{}", e.what());
      }
    }
    throw;
  }
  fs::remove_all(t.trash_dir, error);
  if (error) spdlog::warn("run '{}' is restored but its trash folder '{}' stays: {}", t.run_name, t.trash_dir, error.message());
  try {
    register_run_store(t.store_path);
  } catch (const std::exception& e) {
    spdlog::warn("{}", e.what());
  }
}

}  // namespace expnet
