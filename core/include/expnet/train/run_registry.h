// How the studio and `expnet runs list` find every run trained on this machine
// without being pointed at folders: each run store a trainer opens, other than
// the default one, is registered (by absolute path) in the default store
// (<data_dir>/runs.sqlite, table run_stores). Stores opened by hand in the
// studio are registered too. docs/training.md, "Where runs are found".
#pragma once

#include <string>
#include <vector>

namespace expnet {

// Adds `store_path` (made absolute and canonical) to the default store's
// registry; nothing for the default store itself. Creates the default store
// when absent.
void register_run_store(const std::string& store_path);
void forget_run_store(const std::string& store_path);

struct KnownStore {
  std::string path;     // absolute
  bool exists = false;  // false: registered but the file is gone (moved or deleted)
};
// The default store (when it exists) first, then the registered ones in the
// order they were registered. Reads only; creates nothing.
std::vector<KnownStore> known_run_stores();

}  // namespace expnet
