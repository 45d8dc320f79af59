// The registry of run stores (see expnet/train/run_registry.h): table run_stores
// of the default store, one row per store by canonical absolute path, in the
// order they were registered (rowid).
#include "expnet/train/run_registry.h"

#include <filesystem>

#include "expnet/system/paths.h"
#include "expnet/train/run_store.h"
#include "system/sqlite_statement.h"
#include "train/run_store_schema.h"

namespace fs = std::filesystem;

namespace expnet {
namespace {

// The same store reached by a relative path, a symlink or "a/../b" is registered once.
std::string canonical(const std::string& path) {
  std::error_code error;
  const fs::path absolute = fs::absolute(path, error);
  if (error) return path;
  fs::path out = fs::weakly_canonical(absolute, error);
  if (error) out = absolute.lexically_normal();
  return out.string();
}

// default_run_store_path() without creating the data folder: reading creates nothing.
std::string default_store_no_create() { return data_dir() + "/runs.sqlite"; }

}  // namespace

void register_run_store(const std::string& store_path) {
  const std::string path = canonical(store_path);
  const std::string home = default_run_store_path();
  if (path == canonical(home)) return;
  auto db = open_run_store(home);
  sqlite::Statement s(db.get(), run_store_label(home), "INSERT OR IGNORE INTO run_stores(path) VALUES(?)");
  s.bind(1, path).run();
}

void forget_run_store(const std::string& store_path) {
  const std::string home = default_store_no_create();
  std::error_code error;
  if (!fs::exists(home, error)) return;  // nothing was ever registered
  auto db = open_run_store(home);
  sqlite::Statement s(db.get(), run_store_label(home), "DELETE FROM run_stores WHERE path = ? OR path = ?");
  s.bind(1, canonical(store_path)).bind(2, store_path).run();
}

std::vector<KnownStore> known_run_stores() {
  std::vector<KnownStore> out;
  const std::string home = default_store_no_create();
  std::error_code error;
  if (!fs::exists(home, error)) return out;
  out.push_back({canonical(home), true});
  auto db = open_run_store_read_only(home);
  const std::string label = run_store_label(home);
  if (!has_table(db.get(), label, "run_stores")) return out;  // a version 1 store: nothing registered yet
  sqlite::Statement s(db.get(), label, "SELECT path FROM run_stores ORDER BY rowid");
  while (s.step()) {
    KnownStore store{s.text(0), false};
    if (store.path == out.front().path) continue;
    store.exists = fs::is_regular_file(store.path, error);
    out.push_back(std::move(store));
  }
  return out;
}

}  // namespace expnet
