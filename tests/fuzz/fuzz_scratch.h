// The dataset readers take a path: the harnesses write each input to one file
// of their own (in $TMPDIR, named by the process id so parallel jobs never share).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

namespace expnet_fuzz {

inline std::string scratch_file(const std::string& name, const uint8_t* data, size_t size) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/expnet-fuzz-" + std::to_string(::getpid()) + "-" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out.flush()) std::abort();  // a full disk is not a finding of the reader
  return path;
}

}  // namespace expnet_fuzz
