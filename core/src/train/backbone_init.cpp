// The backbone of a run from another checkpoint (see backbone_init.h).
#include "expnet/train/backbone_init.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>

#include "expnet/checkpoint/pth_file.h"
#include "expnet/checkpoint/pth_writer.h"
#include "expnet/checkpoint/state_dict.h"
#include "expnet/model/demo_model.h"
#include "expnet/model/expansion_net.h"

namespace expnet {
namespace {

constexpr const char* kBackbonePrefix = "swin_transf.";

// The first backbone key (swin_*, final_swin_dim) whose values differ, or "" when
// the backbones are the same: read from the JSON forms, so a key added to the
// configuration is compared without a change here.
std::string first_backbone_difference(const ModelConfig& a, const ModelConfig& b) {
  const auto ja = nlohmann::json::parse(a.to_json()), jb = nlohmann::json::parse(b.to_json());
  const auto backbone_key = [](const std::string& key) {
    return key.rfind("swin_", 0) == 0 || key == "final_swin_dim";
  };
  for (const auto* side : {&ja, &jb})  // both: a flag absent from one side's JSON (swin_conv_merging) differs too
    for (const auto& item : side->items())
      if (backbone_key(item.key()) && ja.value(item.key(), nlohmann::json()) != jb.value(item.key(), nlohmann::json()))
        return item.key();
  return "";
}

}  // namespace

std::string backbone_checkpoint_path(const std::string& value) {
  return value == "demo" ? demo_checkpoint_path() : value;
}

bool same_backbone(const ModelConfig& a, const ModelConfig& b) { return first_backbone_difference(a, b).empty(); }

int64_t init_backbone_from_checkpoint(ExpansionNetImpl& model, const std::string& value, const std::string& source) {
  const std::string path = backbone_checkpoint_path(value);
  const std::string role = "backbone_checkpoint '" + path + "' of " + source;
  {
    const PthFile file(path);
    const auto stored = read_metadata(file).config_json;
    if (!stored)
      throw std::runtime_error(role + ": it carries no model configuration, so its backbone cannot be checked; "
                               "use a checkpoint written by expnet (a run's best.pth, or demo)");
    const auto difference = first_backbone_difference(ModelConfig::from_json(*stored, path), model.config());
    if (!difference.empty())
      throw std::runtime_error(role + ": its backbone differs from the model's (" + difference +
                               "); give the model that checkpoint's swin_* settings "
                               "(e.g. the v1-shapes preset for demo)");
  }
  const auto tensors = read_state_dict(path);
  auto targets = model.named_parameters(/*recurse=*/true);
  auto buffers = model.named_buffers(/*recurse=*/true);
  torch::NoGradGuard no_grad;
  int64_t copied = 0;
  const auto copy_into = [&](const std::string& name, torch::Tensor& target) {
    if (name.rfind(kBackbonePrefix, 0) != 0) return;
    const auto found = std::find_if(tensors.begin(), tensors.end(), [&](const auto& e) { return e.first == name; });
    if (found == tensors.end()) throw std::runtime_error(role + ": it has no '" + name + "'");
    target.copy_(found->second);
    ++copied;
  };
  for (auto& item : targets) copy_into(item.key(), item.value());
  for (auto& item : buffers) copy_into(item.key(), item.value());
  return copied;
}

}  // namespace expnet
