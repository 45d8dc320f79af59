// Opening a run store file without ever harming it (see expnet/train/run_store.h
// and docs/training.md, "Run store"): the file is first looked at read-only;
// what is not a healthy run store of a version this build reads is refused
// untouched; an older version is copied to <path>.v<N>.bak and migrated in one
// transaction; an empty or absent file becomes a store of kRunStoreVersion.
// RunStore, the registry and the trash open their connections here.
#pragma once

#include <string>

#include "system/sqlite_statement.h"

namespace expnet {

// "run store '<path>'": how every error about a store file starts.
std::string run_store_label(const std::string& path);

// A read-write connection to the store at `path` (created when absent) at
// kRunStoreVersion, in WAL mode with a busy timeout; a read-only connection
// when this user may not write the file (a current store only: an older one
// cannot be migrated and is refused). Throws std::runtime_error naming the
// file, the reason and what to do; the file is then unmodified.
sqlite::Database open_run_store(const std::string& path);

// A read-only connection that creates nothing beside the file (no -wal/-shm
// when none are there); the file must exist. Throws naming the file.
sqlite::Database open_run_store_read_only(const std::string& path);

// Whether the connection's main database has a table of that name.
bool has_table(sqlite3* db, const std::string& label, const std::string& table);

}  // namespace expnet
