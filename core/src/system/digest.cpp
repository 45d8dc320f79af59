#include "expnet/system/digest.h"

#include <c10/util/hash.h>
#include <nettle/base16.h>
#include <nettle/sha2.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

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

namespace {

std::string hex_digest(sha256_ctx& context) {
  uint8_t digest[SHA256_DIGEST_SIZE];
  sha256_digest(&context, SHA256_DIGEST_SIZE, digest);
  std::string hex(BASE16_ENCODE_LENGTH(SHA256_DIGEST_SIZE), '\0');
  base16_encode_update(hex.data(), SHA256_DIGEST_SIZE, digest);  // lower-case
  return hex;
}

}  // namespace

std::string sha256_hex(const std::string& bytes) {
  sha256_ctx context;
  sha256_init(&context);
  sha256_update(&context, bytes.size(), reinterpret_cast<const uint8_t*>(bytes.data()));
  return hex_digest(context);
}

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path + "' (" + std::strerror(errno) + ")");
  sha256_ctx context;
  sha256_init(&context);
  std::vector<char> block(1 << 20);
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    sha256_update(&context, static_cast<size_t>(in.gcount()), reinterpret_cast<const uint8_t*>(block.data()));
  }
  if (in.bad()) throw std::runtime_error("cannot read '" + path + "': read error");
  return hex_digest(context);
}

}  // namespace expnet
