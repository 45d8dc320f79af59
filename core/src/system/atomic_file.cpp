#include "expnet/system/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <streambuf>
#include <vector>

namespace expnet {
namespace {

// What the user can do about a failed write.
std::string advice(int error) {
  switch (error) {
    case ENOSPC: return "free space on that disk or write to another one, then try again";
    case EDQUOT: return "free space within your disk quota or write elsewhere, then try again";
    case EFBIG:
      return "the file size limit (`ulimit -f`) or the file system's largest file size is reached; raise the limit or "
             "write to another file system, then try again";
    case EACCES:
    case EPERM:
    case EROFS: return "check the folder's permissions or write elsewhere";
    default: return "check the disk and try again";
  }
}

std::runtime_error write_error(const std::string& path, const std::string& step, int error) {
  return std::runtime_error("cannot write '" + path + "': " + std::strerror(error) + " (" + step + "; the file was left as it was): " +
                            advice(error));
}

// An ostream buffer on a file descriptor that keeps the first write error:
// std::ofstream forgets why a write failed (full disk, file size limit).
class FdBuffer : public std::streambuf {
 public:
  explicit FdBuffer(int fd) : fd_(fd), buffer_(1 << 16) { setp(buffer_.data(), buffer_.data() + buffer_.size()); }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type ch) override {
    if (!drain()) return traits_type::eof();
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    *pptr() = traits_type::to_char_type(ch);
    pbump(1);
    return ch;
  }
  std::streamsize xsputn(const char* data, std::streamsize n) override {
    if (n < epptr() - pptr()) {
      std::memcpy(pptr(), data, static_cast<size_t>(n));
      pbump(static_cast<int>(n));
      return n;
    }
    return drain() && write_all(data, static_cast<size_t>(n)) ? n : 0;
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const bool ok = write_all(pbase(), static_cast<size_t>(pptr() - pbase()));
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return ok;
  }
  bool write_all(const char* data, size_t n) {
    while (error_ == 0 && n > 0) {
      const ssize_t written = ::write(fd_, data, n);
      if (written < 0 && errno == EINTR) continue;
      if (written < 0) error_ = errno;
      else data += written, n -= static_cast<size_t>(written);
    }
    return error_ == 0;
  }

  int fd_;
  int error_ = 0;
  std::vector<char> buffer_;
};

void fsync_folder(const std::string& folder, const std::string& path) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw write_error(path, "opening its folder to make the rename durable", errno);
  const int rc = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  if (rc != 0) throw write_error(path, "making the rename durable", error);
}

// A file name holds at most 255 bytes (NAME_MAX on Linux's file systems); the
// temporary's ".tmp.<pid>.<random>" takes up to 32 of them, so a long target
// name is cut to leave room for it.
constexpr size_t kNameMax = 255, kSuffixMax = 32;

std::string temporary_prefix(const std::filesystem::path& target) {
  const std::string name = target.filename().string();
  return name.substr(0, std::min(name.size(), kNameMax - kSuffixMax)) + ".tmp.";
}

std::string temporary_name(const std::filesystem::path& target) {
  std::random_device rd;
  const std::filesystem::path folder = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  return (folder / (temporary_prefix(target) + std::to_string(::getpid()) + "." + std::to_string(rd()))).string();
}

// The process id in a temporary name (<target>.tmp.<pid>.<random>); 0 when the name is not one.
pid_t temporary_owner(const std::string& name) {
  const auto digits = [](const std::string& s) {
    return !s.empty() && s.size() < 12 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
  };
  const size_t last = name.rfind('.');
  if (last == std::string::npos || last < 6) return 0;
  const size_t mid = name.rfind('.', last - 1);
  if (mid == std::string::npos || mid < 4 || name.compare(mid - 4, 4, ".tmp") != 0) return 0;
  const std::string pid = name.substr(mid + 1, last - mid - 1);
  if (!digits(pid) || !digits(name.substr(last + 1))) return 0;
  return static_cast<pid_t>(std::stoll(pid));
}

// Temporary files in `folder` whose names start with `prefix` and whose process
// is gone (and, with `own`, this process's): what a killed writer left behind.
int remove_temporaries(const std::filesystem::path& folder, const std::string& prefix, bool own) {
  namespace fs = std::filesystem;
  int removed = 0;
  std::error_code error;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const pid_t owner = temporary_owner(name);
    if (owner <= 0 || (owner == ::getpid() && !own)) continue;
    // A live owner other than us may be writing it now (EPERM: alive, not ours to signal).
    if (owner != ::getpid() && (::kill(owner, 0) == 0 || errno == EPERM)) continue;
    std::error_code ignored;
    if (fs::remove(it->path(), ignored)) ++removed;
  }
  return removed;
}

}  // namespace

void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(folder))
    throw std::runtime_error("cannot write '" + path + "': folder '" + folder.string() + "' does not exist; create it first");
  // A killed earlier write of this same file (an export, a checkpoint) left its temporary file here.
  if (target.filename().string().size() > kNameMax)
    throw std::runtime_error("cannot write '" + path + "': its file name is " +
                             std::to_string(target.filename().string().size()) + " bytes, more than the " +
                             std::to_string(kNameMax) + " a file system allows; choose a shorter name");
  remove_temporaries(folder, temporary_prefix(target), false);
  const std::string temp = temporary_name(target);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) throw write_error(path, "creating its temporary file '" + temp + "'", errno);
  try {
    FdBuffer buffer(fd);
    std::ostream out(&buffer);
    try {
      write(out);
    } catch (...) {
      // The writer's own complaint about a bad stream says less than the errno.
      if (buffer.error() != 0) throw write_error(path, "writing its temporary file", buffer.error());
      throw;
    }
    out.flush();
    if (buffer.error() != 0) throw write_error(path, "writing its temporary file", buffer.error());
    if (::fsync(fd) != 0) throw write_error(path, "flushing its temporary file to disk", errno);
    const int closing = fd;
    fd = -1;
    if (::close(closing) != 0) throw write_error(path, "closing its temporary file", errno);
    if (std::rename(temp.c_str(), path.c_str()) != 0) throw write_error(path, "renaming its temporary file into place", errno);
  } catch (...) {
    if (fd >= 0) ::close(fd);
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw;
  }
  fsync_folder(folder.string(), path);
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  write_file_atomic(path, [&](std::ostream& out) { out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())); });
}

int remove_stale_temporaries(const std::string& folder) { return remove_temporaries(folder, "", true); }

}  // namespace expnet
