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

// The first backbone key whose values differ, or "" when the backbones are the same.
std::string first_backbone_difference(const ModelConfig& a, const ModelConfig& b) {
  const auto ja = nlohmann::json::parse(a.backbone_json()), jb = nlohmann::json::parse(b.backbone_json());
  for (const auto* side : {&ja, &jb})  // both: a flag absent from one side's JSON (swin_conv_merging) differs too
    for (const auto& item : side->items())
      if (ja.value(item.key(), nlohmann::json()) != jb.value(item.key(), nlohmann::json())) return item.key();
  return "";
}

}  // namespace

std::string backbone_checkpoint_path(const std::string& value) {
  return value == "demo" ? demo_checkpoint_path() : value;
}

int64_t init_backbone_from_checkpoint(ExpansionNetImpl& model, const std::string& value, const std::string& source) {
  const std::string path = backbone_checkpoint_path(value);
  const std::string role = "backbone_checkpoint '" + path + "' of " + source;
  const std::string fix = "; give the model that checkpoint's swin_* settings (e.g. the v1-shapes preset for demo)";
  {
    // Ours carry their configuration: compare it key by key for the clearest error.
    const PthFile file(path);
    if (const auto stored = read_metadata(file).config_json) {
      const auto difference = first_backbone_difference(ModelConfig::from_json(*stored, path), model.config());
      if (!difference.empty())
        throw std::runtime_error(role + ": its backbone differs from the model's (" + difference + ")" + fix);
    }
  }
  const auto tensors = read_state_dict(path);
  const auto has_prefix = [](const auto& entry) { return entry.first.rfind(kBackbonePrefix, 0) == 0; };
  // Without swin_transf.* names: Microsoft's Swin ImageNet layout.
  if (std::none_of(tensors.begin(), tensors.end(), has_prefix))
    return static_cast<int64_t>(load_swin_backbone(model, path).loaded.size());
  auto targets = model.named_parameters(/*recurse=*/true);
  auto buffers = model.named_buffers(/*recurse=*/true);
  torch::NoGradGuard no_grad;
  int64_t copied = 0;
  const auto copy_into = [&](const std::string& name, torch::Tensor& target) {
    if (name.rfind(kBackbonePrefix, 0) != 0) return;
    const auto found = std::find_if(tensors.begin(), tensors.end(), [&](const auto& e) { return e.first == name; });
    if (found == tensors.end()) throw std::runtime_error(role + ": it has no '" + name + "'" + fix);
    if (found->second.sizes() != target.sizes())
      throw std::runtime_error(role + ": '" + name + "' is " + c10::str(found->second.sizes()) + " there, " +
                               c10::str(target.sizes()) + " in the model" + fix);
    target.copy_(found->second);
    ++copied;
  };
  for (auto& item : targets) copy_into(item.key(), item.value());
  for (auto& item : buffers) copy_into(item.key(), item.value());
  return copied;
}

}  // namespace expnet
