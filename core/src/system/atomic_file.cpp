#include "expnet/system/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace expnet {
namespace {

std::runtime_error io_error(const std::string& what, const std::string& path) {
  return std::runtime_error(what + " '" + path + "': " + std::strerror(errno));
}

void fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) throw io_error("cannot open for fsync", path);
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw io_error("fsync failed for", path);
}

std::string temporary_name(const std::string& path) {
  std::random_device rd;
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd());
}

}  // namespace

void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(folder))
    throw std::runtime_error("cannot write '" + path + "': folder '" + folder.string() + "' does not exist");
  const std::string temp = temporary_name(path);
  try {
    {
      std::ofstream out(temp, std::ios::binary | std::ios::trunc);
      if (!out) throw io_error("cannot create", temp);
      write(out);
      out.flush();
      if (!out) throw io_error("cannot write", temp);
    }
    fsync_path(temp, O_RDONLY);
    if (std::rename(temp.c_str(), path.c_str()) != 0) throw io_error("cannot rename into place", path);
  } catch (...) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw;
  }
  fsync_path(folder.string(), O_RDONLY | O_DIRECTORY);
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  write_file_atomic(path, [&](std::ostream& out) { out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())); });
}

}  // namespace expnet
