// The trainer's lock on a run (see expnet/train/run_lock.h): an open file
// description lock, so it belongs to this open file and not to the process (two
// RunLocks in one process exclude each other as two processes do), and the
// kernel drops it with the last descriptor, however the trainer ends.
#include "expnet/train/run_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

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

// What a folder's lock file says: the run that holds or last held the folder.
struct FolderRecord {
  std::string run, host;
  long long pid = 0;
};

FolderRecord read_record(int fd) {
  std::string text;
  char buffer[4096];
  ssize_t n = 0;
  while (text.size() < 65536 && (n = ::pread(fd, buffer, sizeof(buffer), static_cast<off_t>(text.size()))) > 0)
    text.append(buffer, static_cast<size_t>(n));
  FolderRecord record;
  try {
    const auto j = nlohmann::json::parse(text);
    record.run = j.value("run", std::string());
    record.host = j.value("host", std::string());
    record.pid = j.value("pid", 0LL);
  } catch (const std::exception&) {
    // Empty (being written, or never written) or not ours: no run recorded.
  }
  return record;
}

std::string describe_holder(const FolderRecord& holder) {
  if (holder.run.empty()) return "another trainer (it has not written its run's name yet)";
  return "the run '" + holder.run + "' (pid " + std::to_string(holder.pid) + " on " + holder.host + ")";
}

bool has_checkpoints(const std::string& folder) {
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::path(folder) / "final.pth", ec)) return true;
  const std::filesystem::directory_iterator entries(std::filesystem::path(folder) / "checkpoints", ec);
  return !ec && entries != std::filesystem::directory_iterator();
}

}  // namespace

std::string run_folder_lock_path(const std::string& folder) {
  return (std::filesystem::path(folder) / "run-folder.lock").string();
}

RunFolderLock::RunFolderLock(const std::string& folder, const std::string& run_name) {
  const std::string path = run_folder_lock_path(folder);
  // O_CREAT and the lock make the first of two trainers started together the
  // only one; O_NOFOLLOW: a link planted in the folder is refused, never written through.
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0)
    throw std::runtime_error("run folder '" + folder + "': cannot open its lock file '" + path + "' (" +
                             std::strerror(errno) + "); the folder must be writable, and that name a plain file");
  struct flock lock = whole_file(F_WRLCK);
  if (::fcntl(fd_, F_OFD_SETLK, &lock) != 0) {
    const int error = errno;
    // The holder writes its record right after taking the lock: give it a moment.
    FolderRecord holder = read_record(fd_);
    for (int attempt = 0; attempt < 100 && holder.run.empty(); ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      holder = read_record(fd_);
    }
    ::close(fd_);
    fd_ = -1;
    if (error == EAGAIN || error == EACCES)
      throw std::runtime_error("run folder '" + folder + "' is in use by " + describe_holder(holder) +
                               ": one folder holds one run; train '" + run_name +
                               "' with another --out, or wait for that training to end");
    throw std::runtime_error("run folder lock '" + path + "': cannot lock it (" + std::strerror(error) + ")");
  }
  const FolderRecord previous = read_record(fd_);
  if (!previous.run.empty() && previous.run != run_name && has_checkpoints(folder)) {
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error("run folder '" + folder + "' holds the checkpoints of the run '" + previous.run +
                             "': one folder holds one run; train '" + run_name + "' with another --out, or continue '" +
                             previous.run + "' with --resume and its config");
  }
  const std::string record =
      nlohmann::json{{"run", run_name}, {"pid", static_cast<long long>(::getpid())}, {"host", host_name()}}
          .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
      "\n";
  const bool written = ::ftruncate(fd_, 0) == 0 &&
                       ::pwrite(fd_, record.data(), record.size(), 0) == static_cast<ssize_t>(record.size());
  if (!written) {
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error("run folder lock '" + path + "': cannot write it (" + std::strerror(error) +
                             "); free some space or use another --out");
  }
}

void make_run_folder(const std::string& folder) {
  for (const auto& part : std::filesystem::path(folder))
    if (part.string().size() > 255)
      throw std::runtime_error("cannot create the run folder '" + folder + "': the name '" + part.string().substr(0, 40) +
                               "...' is " + std::to_string(part.string().size()) +
                               " bytes, more than the 255 a file system allows; choose a shorter --out");
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec || !std::filesystem::is_directory(folder, ec))
    throw std::runtime_error("cannot create the run folder '" + folder + "' (" +
                             (ec ? ec.message() : std::string("a file of that name is in the way")) +
                             "): choose a writable --out");
}

RunFolderLock::~RunFolderLock() {
  if (fd_ >= 0) ::close(fd_);
}

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

long long stop_run(const std::string& store_path, int64_t run) {
  const std::string what = "run " + std::to_string(run) + " of '" + store_path + "'";
  if (!run_is_live(store_path, run)) throw std::runtime_error(what + " is not running (no trainer holds its lock)");
  std::ifstream in(run_lock_path(store_path, run));
  long long pid = 0;
  std::string host;
  if (!(in >> pid >> host) || pid <= 0)
    throw std::runtime_error(what + ": its trainer has not written its pid yet; try again in a second");
  if (host != host_name())
    throw std::runtime_error(what + " is trained on " + host + " (pid " + std::to_string(pid) +
                             "), not here: stop it there (expnet runs stop --host " + host + ")");
  // The pid must still be an expnet: never signal a process that took a dead trainer's number.
  std::error_code error;
  const auto exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", error);
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (exe.empty() || (exe != self && exe.filename() != "expnet" && exe.filename() != "expnet-studio"))
    throw std::runtime_error(what + ": pid " + std::to_string(pid) + " is not an expnet trainer (" + exe.string() +
                             "); it was not signalled");
  if (::kill(static_cast<pid_t>(pid), SIGINT) != 0)
    throw std::runtime_error(what + ": cannot signal pid " + std::to_string(pid) + " (" + std::strerror(errno) + ")");
  return pid;
}

std::string run_status(const RunInfo& run, bool live) {
  if (live) return "running";
  if (run.status == "running" || run.status == "created") return "interrupted";
  return run.status;
}

}  // namespace expnet
