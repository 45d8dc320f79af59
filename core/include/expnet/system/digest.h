// Content digests. SHA-1 (LibTorch's c10::sha1): the distillation targets
// record the teacher checkpoint's digest as its identity and checksum each chunk
// of targets with it (expnet/train/distillation_targets.h). SHA-256 (nettle):
// the identity of a checkpoint in the per-sample evaluation store
// (expnet/metrics/sample_evaluation.h), the digest users see in the README and
// `sha256sum`. Integrity, not security: nothing here defends against a forger.
#pragma once

#include <string>

namespace expnet {

std::string sha1_hex(const std::string& bytes);  // 40 lower-case hex digits
// Of a file's content. Throws std::runtime_error naming the file when it cannot be read.
std::string sha1_file(const std::string& path);

std::string sha256_hex(const std::string& bytes);  // 64 lower-case hex digits
// Of a file's content, read in blocks (checkpoints reach a gigabyte). Throws
// std::runtime_error naming the file when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace expnet
