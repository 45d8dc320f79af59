// Deleting a run without losing it: the run's rows move to a store of their
// own and its run folder moves, both into <data_dir>/trash/<time>-<name>/, with
// a manifest (trash.json) saying where they came from; restore_run() puts them
// back. A running run (run_lock.h) is refused with the reason.
#pragma once

#include <cstdint>
#include <string>

namespace expnet {

struct TrashedRun {
  std::string trash_dir;   // <data_dir>/trash/<UTC time>-<name>
  std::string store_path;  // where the rows came from (absolute)
  std::string run_name;
  std::string out_dir;     // the run folder as it was (absolute; empty when it did not exist)
  bool moved_folder = false;
};

std::string trash_root();  // <data_dir>/trash (created)

// Throws std::runtime_error with the reason (running, unknown run, cannot move)
// and leaves everything as it was.
TrashedRun trash_run(const std::string& store_path, const std::string& run_name_or_id);
// Reads <trash_dir>/trash.json. Throws when the run's name is taken again or
// its folder's place is occupied (says which), leaving the trash as it is.
TrashedRun read_trashed_run(const std::string& trash_dir);
void restore_run(const TrashedRun& trashed);

}  // namespace expnet
