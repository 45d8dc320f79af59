// A run folder's checkpoints (see run_checkpoints.h).
#include "train/run_checkpoints.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

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

bool RunCheckpoints::any() const { return fs::exists(dir_ + "/latest.json"); }

std::string RunCheckpoints::latest_path() const {
  if (!any()) return "";
  std::ifstream in(dir_ + "/latest.json");
  return dir_ + "/" + json::parse(in).at("checkpoint").get<std::string>() + ".pth";
}

void RunCheckpoints::save(TrainProgress& progress, const torch::nn::Module& model, const CheckpointMetadata& meta,
                          const torch::optim::Optimizer* optimizer, bool best) const {
  fs::create_directories(dir_);
  const auto state = module_state(model);
  if (best) save_checkpoint(dir_ + "/best.pth", state, meta);
  char stem[96];
  std::snprintf(stem, sizeof stem, "step-%08lld", static_cast<long long>(progress.global_step));
  const std::string base = dir_ + "/" + stem;
  save_checkpoint(base + ".pth", state, meta);
  torch::serialize::OutputArchive archive;
  if (optimizer) {
    torch::serialize::OutputArchive saved;
    optimizer->save(saved);
    archive.write("optimizer", saved);
  }
  archive.write("rng", at::detail::getDefaultCPUGenerator().get_state());
  if (progress.kept.empty() || progress.kept.back() != stem) progress.kept.push_back(stem);
  while (static_cast<int64_t>(progress.kept.size()) > keep_last_) {
    fs::remove(dir_ + "/" + progress.kept.front() + ".pth");
    fs::remove(dir_ + "/" + progress.kept.front() + ".state");
    progress.kept.erase(progress.kept.begin());
  }
  archive.write("progress", c10::IValue(progress.to_json()));
  std::ostringstream bytes;
  archive.save_to(bytes);
  write_file_atomic(base + ".state", bytes.str());
  write_file_atomic(dir_ + "/latest.json", json{{"checkpoint", std::string(stem)}}.dump() + "\n");
}

std::optional<ResumePoint> RunCheckpoints::load_latest(torch::nn::Module& model) const {
  if (!any()) return std::nullopt;
  std::ifstream in(dir_ + "/latest.json");
  ResumePoint point;
  point.stem = json::parse(in).at("checkpoint").get<std::string>();
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
