// The distillation targets file (see expnet/train/distillation_targets.h).
#include "expnet/train/distillation_targets.h"

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "expnet/system/atomic_file.h"
#include "expnet/system/digest.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace expnet {
namespace {

constexpr const char* kFormat = "expnet-distillation-targets";

json header_of(const DistillationSpec& spec) {
  std::string keys;
  for (const auto& image : spec.images) keys += image + '\n';
  return json{{"format", kFormat},
              {"version", 1},
              {"teacher", spec.teacher},
              {"teacher_sha1", spec.teacher_sha1},
              {"beam", spec.beam},
              {"max_len", spec.max_len},
              {"images", spec.images.size()},
              {"images_sha1", sha1_hex(keys)},
              {"chunk", spec.chunk}};
}

// What differs between a file's header and the one this spec writes ("" = none).
std::string header_difference(const json& found, const json& wanted) {
  if (!found.is_object() || found.value("format", "") != kFormat) return "not a distillation targets file";
  if (found.value("teacher_sha1", "") != wanted["teacher_sha1"])
    return "made by another teacher (SHA-1 " + found.value("teacher_sha1", std::string("?")) + ")";
  for (const char* key : {"version", "beam", "max_len", "images", "images_sha1", "chunk"})
    if (!found.contains(key) || found[key] != wanted[key])
      return std::string("its header's ") + key + " differs (" + (found.contains(key) ? found[key].dump() : "absent") +
             " in the file, " + wanted[key].dump() + " now)";
  return "";
}

std::string chunk_line(size_t index, size_t first, const json& captions) {
  const std::string body = captions.dump();
  return json{{"chunk", index}, {"first", first}, {"captions", captions}, {"sha1", sha1_hex(body)}}.dump() + "\n";
}

// The file's lines as written: the last one without '\n' is torn (an
// interrupted append) and is not returned.
std::vector<std::string> complete_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream all;
  all << in.rdbuf();
  const std::string text = all.str();
  std::vector<std::string> lines;
  size_t begin = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', begin)) {
    lines.push_back(text.substr(begin, nl - begin));
    begin = nl + 1;
  }
  return lines;
}

// Appends `line` and makes it durable before the next chunk is captioned.
void append_durably(const std::string& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("distillation targets '" + path + "': cannot append (" + std::strerror(errno) + ")");
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw std::runtime_error("distillation targets '" + path + "': write failed (" + why + "); check the disk");
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced) throw std::runtime_error("distillation targets '" + path + "': fsync failed; check the disk");
}

struct ReadResult {
  std::vector<std::vector<std::string>> captions;
  std::vector<std::string> good_lines;  // header and the valid chunks, in order
  std::string problem;                  // why reading stopped early ("" = at the end)
  bool header_ok = false;
};

ReadResult read_valid_prefix(const std::string& path, const DistillationSpec& spec) {
  ReadResult r;
  if (!fs::exists(path)) return r;
  const auto lines = complete_lines(path);
  const json wanted = header_of(spec);
  if (lines.empty()) {
    r.problem = "its header is missing";
    return r;
  }
  json header = json::parse(lines[0], nullptr, false);
  r.problem = header_difference(header, wanted);
  if (!r.problem.empty()) return r;
  r.header_ok = true;
  r.good_lines.push_back(lines[0]);
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t index = i - 1, first = index * spec.chunk;
    const json chunk = json::parse(lines[i], nullptr, false);
    bool shaped = false;
    try {
      shaped = chunk.is_object() && chunk.value("chunk", SIZE_MAX) == index &&
                        chunk.value("first", SIZE_MAX) == first && chunk.contains("captions") &&
                        chunk["captions"].is_array() && chunk.contains("sha1");
    } catch (const json::exception&) {
      shaped = false;  // a key of the wrong type
    }
    if (!shaped) {
      r.problem = "chunk " + std::to_string(index) + " is not a valid chunk line";
      return r;
    }
    if (chunk["sha1"] != sha1_hex(chunk["captions"].dump())) {
      r.problem = "chunk " + std::to_string(index) + " fails its checksum";
      return r;
    }
    const size_t expected = std::min(spec.chunk, spec.images.size() - std::min(first, spec.images.size()));
    if (chunk["captions"].size() != expected || expected == 0) {
      r.problem = "chunk " + std::to_string(index) + " holds " + std::to_string(chunk["captions"].size()) +
                  " captions, not " + std::to_string(expected);
      return r;
    }
    try {
      for (const auto& caption : chunk["captions"]) r.captions.push_back(caption.get<std::vector<std::string>>());
    } catch (const json::exception&) {
      r.captions.resize(first);
      r.problem = "chunk " + std::to_string(index) + " holds a caption that is not a list of words";
      return r;
    }
    r.good_lines.push_back(lines[i]);
  }
  return r;
}

}  // namespace

std::string distillation_targets_path(const DistillationSpec& spec) {
  return spec.dir + "/targets-" + spec.teacher_sha1.substr(0, 16) + ".jsonl";
}

DistillationTargets make_distillation_targets(const DistillationSpec& spec, const TeacherCaptions& teacher,
                                              const std::function<void(size_t, size_t)>& on_chunk) {
  if (spec.chunk == 0 || spec.teacher_sha1.size() < 16)
    throw std::invalid_argument("distillation targets: a chunk size and the teacher's SHA-1 are needed");
  fs::create_directories(spec.dir);
  DistillationTargets out;
  out.path = distillation_targets_path(spec);
  auto prefix = read_valid_prefix(out.path, spec);
  if (fs::exists(out.path) && !prefix.problem.empty()) {
    out.discarded = prefix.problem;
    spdlog::warn("distillation targets '{}': {}; {}", out.path, prefix.problem,
                 prefix.header_ok ? "the chunks from there on are captioned again" : "the file is captioned again");
  }
  if (!prefix.header_ok) {
    prefix.captions.clear();
    prefix.good_lines = {header_of(spec).dump()};
  }
  // Rewrite the trusted part atomically when something after it is dropped
  // (a torn or bad line, another header); an intact file is left as it is.
  std::string kept;
  for (const auto& line : prefix.good_lines) kept += line + "\n";
  if (!fs::exists(out.path) || fs::file_size(out.path) != kept.size()) write_file_atomic(out.path, kept);
  for (const auto& entry : fs::directory_iterator(spec.dir)) {
    const auto name = entry.path().filename().string();
    if (name.rfind("targets-", 0) == 0 && entry.path() != fs::path(out.path))
      spdlog::info("distillation targets '{}' were made by another teacher: not reused", entry.path().string());
  }
  out.captions = std::move(prefix.captions);
  out.reused = out.captions.size();
  const size_t total = spec.images.size();
  while (out.captions.size() < total) {
    const size_t first = out.captions.size(), count = std::min(spec.chunk, total - first);
    auto captions = teacher(first, count);
    if (captions.size() != count)
      throw std::logic_error("distillation targets: the teacher returned " + std::to_string(captions.size()) +
                             " captions for " + std::to_string(count) + " images");
    append_durably(out.path, chunk_line(first / spec.chunk, first, json(captions)));
    for (auto& c : captions) out.captions.push_back(std::move(c));
    out.computed += count;
    if (on_chunk) on_chunk(out.captions.size(), total);
  }
  return out;
}

DistillationTargets read_distillation_targets(const DistillationSpec& spec) {
  DistillationTargets out;
  out.path = distillation_targets_path(spec);
  auto prefix = read_valid_prefix(out.path, spec);
  if (!fs::exists(out.path)) throw std::runtime_error("distillation targets '" + out.path + "' are missing");
  if (!prefix.problem.empty() || prefix.captions.size() != spec.images.size())
    throw std::runtime_error("distillation targets '" + out.path + "' are not complete and valid (" +
                             (prefix.problem.empty() ? std::string("chunks missing") : prefix.problem) +
                             "); the writing rank makes them first");
  out.captions = std::move(prefix.captions);
  out.reused = out.captions.size();
  return out;
}

}  // namespace expnet
