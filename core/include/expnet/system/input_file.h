// Files a user names as input (a config, a checkpoint, a vocabulary, a dataset,
// references, a feature cache): refused at once when they are not regular
// files. A FIFO would block the reader until some writer appears (forever, to a
// user), a device may never end, a folder is not what was meant.
#pragma once

#include <cstdint>
#include <string>

namespace expnet {

// Text inputs small by nature (docs/reliability.md, "Limits"): a config, a
// recipe or an ablation file; a vocabulary (COCO's 10,000 words: 0.1 MB).
inline constexpr uint64_t kMaxConfigBytes = uint64_t{16} << 20;
inline constexpr uint64_t kMaxVocabularyBytes = uint64_t{16} << 20;

// Opens `path` read-only without blocking (O_NONBLOCK, so a FIFO cannot hang
// the open), checks that it is a regular file (links followed), clears
// O_NONBLOCK and returns the descriptor (O_CLOEXEC): the caller reads exactly
// what was checked and closes it. Throws std::runtime_error:
// "<what> 'PATH': <reason>: <what to do>" (missing, unreadable, a folder, a
// FIFO, a device or socket).
int open_input_file(const std::string& path, const std::string& what);

// The same check for readers that open the path themselves (LibTorch, SQLite,
// streams): opens, checks and closes.
void check_input_file(const std::string& path, const std::string& what);

// The whole of a text input (a config, a vocabulary, a dataset, references),
// through open_input_file. Larger than `max_bytes`: refused before reading, with
// the size and the limit. A read that fails is an error, never the end of the
// file (a short read of a damaged disk would otherwise lose the rest silently).
std::string read_input_file(const std::string& path, const std::string& what, uint64_t max_bytes = uint64_t{1} << 32);

}  // namespace expnet
