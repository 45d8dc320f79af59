// Writing user files so they are never lost or half-written: write a temporary
// file (<path>.tmp.<pid>.<random>) in the same folder, fsync it, rename it over
// the target, fsync the folder. On any failure the temporary file is removed and
// the target is left as it was; one a killed earlier write of the same target
// left behind is removed by the next write.
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace expnet {

// Writes `bytes` to `path` atomically. Throws std::runtime_error naming the
// file, the reason (e.g. "No space left on device", "File too large") and what to do.
void write_file_atomic(const std::string& path, const std::string& bytes);

// Same, streaming: `write` fills the stream; nothing replaces `path` unless
// it returns normally and every byte reached the disk. The first write error
// is kept (the stream goes bad and swallows the rest) and reported once `write`
// returns; an exception `write` throws after a write error is replaced by that report.
void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write);

// Removes the temporary files write_file_atomic left in `folder` when its
// process was killed: those of processes that are gone, and this process's own
// (call it only while this process writes nothing there). Returns how many.
int remove_stale_temporaries(const std::string& folder);

}  // namespace expnet
