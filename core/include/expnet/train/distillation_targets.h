// Sequence-level distillation targets of a PNAIC run (docs/pnaic-method.md,
// "Training"; docs/training.md, "PNAIC"): the teacher's caption of every
// training image, computed once and kept in the run folder as
// <dir>/targets-<first 16 hex digits of the teacher's SHA-1>.jsonl:
//   line 1: {"format":"expnet-distillation-targets","version":1,"teacher","teacher_sha1",
//            "beam","max_len","images","images_sha1","chunk"}
//   then one line per chunk of `chunk` images, in order:
//            {"chunk":i,"first":i*chunk,"captions":[[words...],...],"sha1":SHA-1 of the captions' JSON}
// A chunk line is appended and fsynced when its images are captioned, so an
// interrupted run resumes at the first missing chunk; a torn last line is
// dropped. A file whose header does not fit (another teacher, other images,
// beam or length) or whose chunk fails its checksum is not reused: it is
// rewritten from the first chunk that cannot be trusted, with a warning.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace expnet {

struct DistillationSpec {
  std::string dir;                  // created when missing (<out>/distillation)
  std::string teacher;              // as the recipe names it (recorded, shown)
  std::string teacher_sha1;       // of the teacher checkpoint file: the file's identity
  int beam = 3;
  int max_len = 20;                 // words
  std::vector<std::string> images;  // the training images in dataset order (paths under the image root)
  size_t chunk = 64;                // images per chunk line
};

// The teacher's captions (words) of spec.images[first, first + count).
using TeacherCaptions = std::function<std::vector<std::vector<std::string>>(size_t first, size_t count)>;

struct DistillationTargets {
  std::string path;
  std::vector<std::vector<std::string>> captions;  // one per spec.images entry
  size_t reused = 0, computed = 0;                 // images taken from the file / captioned now
  std::string discarded;  // why (part of) an existing file was not reused; empty when all of it was
};

std::string distillation_targets_path(const DistillationSpec& spec);

// Reads what the file holds and is valid, captions the rest with `teacher`
// chunk by chunk (each appended as it is done). `on_chunk` (optional) is told
// the images done so far. Throws std::runtime_error naming the file on a write
// error; exceptions of `teacher` pass through (the chunks written stay).
DistillationTargets make_distillation_targets(const DistillationSpec& spec, const TeacherCaptions& teacher,
                                              const std::function<void(size_t done, size_t total)>& on_chunk = {});

// A complete valid file only (distributed ranks other than the writer): throws
// std::runtime_error naming the file and what is wrong otherwise.
DistillationTargets read_distillation_targets(const DistillationSpec& spec);

}  // namespace expnet
