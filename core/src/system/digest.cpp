#include "expnet/system/digest.h"

#include <c10/util/hash.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace expnet {

std::string sha1_hex(const std::string& bytes) {
  // c10::sha1 hashes in its constructor, and only a non-empty string.
  if (bytes.empty()) return "da39a3ee5e6b4b0d3255bfef95601890afd80709";  // SHA-1 of no bytes
  return c10::sha1(bytes).str();
}

std::string sha1_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path + "' (" + std::strerror(errno) + ")");
  const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error("cannot read '" + path + "': read error");
  return sha1_hex(content);
}

}  // namespace expnet
