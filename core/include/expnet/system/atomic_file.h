// Writing user files so they are never lost or half-written: write a temporary
// file in the same folder, fsync it, rename it over the target, fsync the folder.
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace expnet {

// Writes `bytes` to `path` atomically. Throws std::runtime_error naming the
// file and the reason (disk full, permission, missing folder).
void write_file_atomic(const std::string& path, const std::string& bytes);

// Same, streaming: `write` fills the stream; nothing replaces `path` unless
// it returns normally and every byte reached the disk.
void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write);

}  // namespace expnet
