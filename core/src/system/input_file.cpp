#include "expnet/system/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>

namespace expnet {

int open_input_file(const std::string& path, const std::string& what) {
  const std::string head = what + " '" + path + "': ";
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT || error == ENOTDIR)
      throw std::runtime_error(head + "no such file: check the path (relative paths start from the current folder)");
    throw std::runtime_error(head + std::strerror(error) + ": check the path and its permissions");
  }
  struct stat st {};
  const char* problem = nullptr;
  if (::fstat(fd, &st) != 0)
    problem = "cannot be examined";
  else if (S_ISDIR(st.st_mode))
    problem = "is a folder, not a file: give the file inside it";
  else if (S_ISFIFO(st.st_mode))
    problem = "is a FIFO (named pipe), not a file: reading it would wait for a writer; give a regular file";
  else if (!S_ISREG(st.st_mode))
    problem = "is a device or socket, not a file: give a regular file";
  if (!problem && ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) problem = "cannot be read";
  if (problem) {
    ::close(fd);
    throw std::runtime_error(head + problem);
  }
  return fd;
}

std::string read_input_file(const std::string& path, const std::string& what, uint64_t max_bytes) {
  const int fd = open_input_file(path, what);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  const std::string head = what + " '" + path + "': ";
  struct stat st {};
  ::fstat(fd, &st);
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes)
    throw std::runtime_error(head + "the file is " + std::to_string(size) + " bytes, more than the " +
                             std::to_string(max_bytes) + " bytes a " + what + " may have: check that this is the file you meant");
  std::string text;
  try {
    text.resize(static_cast<size_t>(size));
    size_t done = 0;
    for (;;) {
      if (done == text.size()) {
        if (text.size() >= max_bytes) {  // it grew while being read
          char probe = 0;
          if (::read(fd, &probe, 1) == 0) break;
          throw std::runtime_error(head + "the file grew past the " + std::to_string(max_bytes) + " bytes a " + what +
                                   " may have while it was read");
        }
        text.resize(std::min<uint64_t>(max_bytes, std::max<uint64_t>(4096, text.size() * 2)));
      }
      const ssize_t n = ::read(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw std::runtime_error(head + "reading failed after " + std::to_string(done) + " bytes (" +
                                          std::strerror(errno) + "): check the disk and the file, then retry");
      if (n == 0) break;
      done += static_cast<size_t>(n);
    }
    text.resize(done);
  } catch (const std::bad_alloc&) {
    throw std::runtime_error(head + "not enough memory to read its " + std::to_string(size) + " bytes");
  }
  return text;
}

void check_input_file(const std::string& path, const std::string& what) { ::close(open_input_file(path, what)); }

}  // namespace expnet
