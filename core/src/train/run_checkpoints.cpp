// A run folder's checkpoints (see run_checkpoints.h).
#include "train/run_checkpoints.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "expnet/checkpoint/pth_writer.h"
#include "expnet/checkpoint/state_dict.h"
#include "expnet/system/atomic_file.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace expnet {

namespace {

// A step checkpoint's file (step-NNNNNNNN.pth / .state): its stem, or "" when the name is not one.
std::string step_stem(const fs::path& file) {
  const std::string stem = file.stem().string();
  const std::string ext = file.extension().string();
  if ((ext != ".pth" && ext != ".state") || stem.size() <= 5 || stem.compare(0, 5, "step-") != 0) return "";
  for (size_t i = 5; i < stem.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(stem[i]))) return "";
  return stem;
}

}  // namespace

bool RunCheckpoints::any() const { return fs::exists(dir_ + "/latest.json"); }

std::string RunCheckpoints::latest_stem() const {
  if (!any()) return "";
  std::ifstream in(dir_ + "/latest.json");
  try {
    return json::parse(in).at("checkpoint").get<std::string>();
  } catch (const std::exception& e) {
    throw std::runtime_error(dir_ + "/latest.json: not a checkpoint pointer (" + std::string(e.what()) +
                             "); point it at the newest step-NNNNNNNN with {\"checkpoint\": \"step-NNNNNNNN\"}");
  }
}

std::string RunCheckpoints::latest_path() const {
  const std::string stem = latest_stem();
  return stem.empty() ? "" : dir_ + "/" + stem + ".pth";
}

// Kill- and disk-full-safe order: the new files are complete on disk before
// latest.json names them, and the previous checkpoint goes only after that.
void RunCheckpoints::save(TrainProgress& progress, const torch::nn::Module& model, const CheckpointMetadata& meta,
                          const torch::optim::Optimizer* optimizer, bool best) const {
  fs::create_directories(dir_);
  remove_stale_temporaries(dir_);
  const auto state = module_state(model);
  char stem[96];
  std::snprintf(stem, sizeof stem, "step-%08lld", static_cast<long long>(progress.global_step));
  const std::string base = dir_ + "/" + stem;
  TrainProgress next = progress;
  if (next.kept.empty() || next.kept.back() != stem) next.kept.push_back(stem);
  while (static_cast<int64_t>(next.kept.size()) > keep_last_) next.kept.erase(next.kept.begin());
  torch::serialize::OutputArchive archive;
  if (optimizer) {
    torch::serialize::OutputArchive saved;
    optimizer->save(saved);
    archive.write("optimizer", saved);
  }
  archive.write("rng", at::detail::getDefaultCPUGenerator().get_state());
  archive.write("progress", c10::IValue(next.to_json()));
  std::ostringstream bytes;
  archive.save_to(bytes);
  try {
    if (best) save_checkpoint(dir_ + "/best.pth", state, meta);
    save_checkpoint(base + ".pth", state, meta);
    write_file_atomic(base + ".state", bytes.str());
    write_file_atomic(dir_ + "/latest.json", json{{"checkpoint", std::string(stem)}}.dump() + "\n");
  } catch (const std::exception& e) {
    // Unnamed by latest.json, the new step's files are no checkpoint: the previous one stays the latest.
    std::string latest;
    try {
      latest = latest_stem();
    } catch (const std::exception&) {  // the write error is the one to report
    }
    if (latest != stem) {
      std::error_code ignored;
      fs::remove(base + ".pth", ignored);
      fs::remove(base + ".state", ignored);
    }
    throw std::runtime_error("checkpoint " + std::string(stem) + " not saved (" +
                             (latest.empty() ? "the run has no checkpoint yet"
                                             : "the run's latest checkpoint is still " + latest + ", intact") +
                             "; once fixed, continue with `expnet train --resume`): " + e.what());
  }
  progress.kept = next.kept;
  remove_unkept(progress.kept);
}

void RunCheckpoints::tidy(const std::vector<std::string>& kept) const {
  remove_stale_temporaries(dir_);
  remove_unkept(kept);
}

// Step files beyond keep_last, including those a killed process left behind
// (an older one it had not yet deleted, a newer one latest.json never named).
void RunCheckpoints::remove_unkept(const std::vector<std::string>& kept) const {
  std::error_code error;
  std::vector<fs::path> unkept;
  for (fs::directory_iterator it(dir_, error), end; !error && it != end; it.increment(error)) {
    const std::string stem = step_stem(it->path());
    if (!stem.empty() && std::find(kept.begin(), kept.end(), stem) == kept.end()) unkept.push_back(it->path());
  }
  for (const auto& file : unkept) fs::remove(file, error);
}

std::optional<ResumePoint> RunCheckpoints::load_latest(torch::nn::Module& model) const {
  if (!any()) return std::nullopt;
  ResumePoint point;
  point.stem = latest_stem();
  load_state_dict(model, dir_ + "/" + point.stem + ".pth");
  torch::serialize::InputArchive archive;
  archive.load_from(dir_ + "/" + point.stem + ".state");
  c10::IValue progress;
  archive.read("progress", progress);
  point.progress = TrainProgress::from_json(progress.toStringRef());
  torch::Tensor rng;
  archive.read("rng", rng);
  at::Generator generator = at::detail::getDefaultCPUGenerator();  // shares the global generator
  generator.set_state(rng);
  point.has_optimizer = archive.try_read("optimizer", point.optimizer);
  return point;
}

}  // namespace expnet
