// The trainer's lock on a run (see expnet/train/run_lock.h): an open file
// description lock, so it belongs to this open file and not to the process (two
// RunLocks in one process exclude each other as two processes do), and the
// kernel drops it with the last descriptor, however the trainer ends.
#include "expnet/train/run_lock.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace expnet {
namespace {

struct flock whole_file(short type) {
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  lock.l_start = 0;
  lock.l_len = 0;  // to the end, however long
  lock.l_pid = 0;  // required for OFD locks
  return lock;
}

// "pid 123 on host" as the holder wrote it, or a plain phrase when it has not yet.
std::string holder_of(const std::string& path) {
  std::ifstream in(path);
  long long pid = 0;
  std::string host;
  if (in >> pid >> host && pid > 0) return "pid " + std::to_string(pid) + " on " + host;
  return "another process (it has not written its pid yet)";
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "unknown-host";
  return name;
}

}  // namespace

std::string run_lock_path(const std::string& store_path, int64_t run) {
  return store_path + ".run" + std::to_string(run) + ".lock";
}

RunLock::RunLock(const std::string& store_path, int64_t run) : path_(run_lock_path(store_path, run)) {
  // A holder that ends unlinks the file; whoever opened it just before may then
  // lock a file no longer at this path, so the lock only counts once the path
  // still names the locked file.
  for (int attempt = 0; attempt < 100; ++attempt) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw std::runtime_error("run lock '" + path_ + "': cannot create it (" + std::strerror(errno) +
                               "); the run store's folder must be writable to train");
    struct flock lock = whole_file(F_WRLCK);
    if (::fcntl(fd_, F_OFD_SETLK, &lock) != 0) {
      const int error = errno;
      ::close(fd_);
      fd_ = -1;
      if (error == EAGAIN || error == EACCES)
        throw std::runtime_error("run " + std::to_string(run) + " of run store '" + store_path +
                                 "' is being trained by " + holder_of(path_) +
                                 ": wait for that training to end, or stop it, before training this run");
      throw std::runtime_error("run lock '" + path_ + "': cannot lock it (" + std::strerror(error) + ")");
    }
    struct stat held {}, named {};
    if (::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino)
      break;
    ::close(fd_);
    fd_ = -1;
  }
  if (fd_ < 0) throw std::runtime_error("run lock '" + path_ + "': it keeps being replaced; try again");
  const std::string line = std::to_string(::getpid()) + " " + host_name() + "\n";
  const bool written = ::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, line.data(), line.size(), 0) == static_cast<ssize_t>(line.size());
  (void)written;  // who holds it is for messages only: the lock is held either way
}

RunLock::~RunLock() {
  // Unlink first: once the lock is released, the path must no longer lead to this file.
  ::unlink(path_.c_str());
  ::close(fd_);
}

bool run_is_live(const std::string& store_path, int64_t run) {
  const int fd = ::open(run_lock_path(store_path, run).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // never trained since locks exist, or ended cleanly
  struct flock lock = whole_file(F_WRLCK);
  const bool ok = ::fcntl(fd, F_OFD_GETLK, &lock) == 0;
  ::close(fd);
  return ok && lock.l_type != F_UNLCK;
}

std::string run_status(const RunInfo& run, bool live) {
  if (live) return "running";
  if (run.status == "running" || run.status == "created") return "interrupted";
  return run.status;
}

}  // namespace expnet
