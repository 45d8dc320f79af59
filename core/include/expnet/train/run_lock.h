// Whether a run is being trained right now, from a lock the trainer holds
// while it runs (never guessed from timestamps): an open file description lock
// (fcntl F_OFD_SETLK) on <store path>.run<id>.lock. The kernel drops it when the
// trainer exits in any way, SIGKILL included, so a reader that finds the lock
// free and the stored status "running" knows the run was interrupted.
#pragma once

#include <cstdint>
#include <string>

#include "expnet/train/run_store.h"

namespace expnet {

std::string run_lock_path(const std::string& store_path, int64_t run);

// Held by the trainer (rank 0) from the run's creation or resume to its end.
// Throws naming the holder's pid and host (written in the file) when another
// process trains the same run.
class RunLock {
 public:
  RunLock(const std::string& store_path, int64_t run);
  ~RunLock();  // releases and removes the lock file
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  std::string path_;
  int fd_ = -1;
};

// One folder holds one run. The trainer (rank 0) takes <folder>/run-folder.lock
// (created and locked with an open file description lock before anything of the
// run is written) and writes its run's name, pid and host into it; the name stays
// after the trainer ends. Refused, naming the other run: the folder is in use by
// a live trainer (any name, this one included), or it holds checkpoints of a run
// of another name. A folder whose recorded run left no checkpoint is taken over.
class RunFolderLock {
 public:
  RunFolderLock(const std::string& folder, const std::string& run_name);
  ~RunFolderLock();  // releases the lock; the file and the name stay
  RunFolderLock(const RunFolderLock&) = delete;
  RunFolderLock& operator=(const RunFolderLock&) = delete;

 private:
  int fd_ = -1;
};
std::string run_folder_lock_path(const std::string& folder);

// Creates a run folder (and its parents); the error names it, the reason and the fix.
void make_run_folder(const std::string& folder);

// True while some process holds the run's lock. Only tests the lock (F_OFD_GETLK):
// never takes it, so it cannot get in a starting trainer's way.
bool run_is_live(const std::string& store_path, int64_t run);

// Asks the run's trainer to stop as Ctrl-C does (SIGINT to the pid its lock
// file names, on this machine): it writes a checkpoint, its status becomes
// "interrupted", and `expnet train --resume` continues it. Returns the pid.
// Throws naming the run when it is not running here, or its trainer cannot be
// told (a pid of another host, a process that is not expnet).
long long stop_run(const std::string& store_path, int64_t run);

// What is true now: "running" when live; a stored "running" or "created" whose
// lock is free is "interrupted"; otherwise the stored status.
std::string run_status(const RunInfo& run, bool live);

}  // namespace expnet
