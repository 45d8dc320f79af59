// A module's state_dict entries in PyTorch's order, and parameter counts.
#include "expnet/model/state_entries.h"

#include <torch/torch.h>

namespace expnet {

namespace {
void collect_state(const torch::nn::Module& module, const std::string& prefix, std::vector<StateEntry>& out) {
  for (const auto& item : module.named_parameters(/*recurse=*/false))
    if (item.value().defined()) out.push_back({prefix + item.key(), item.value(), false});
  for (const auto& item : module.named_buffers(/*recurse=*/false))
    if (item.value().defined()) out.push_back({prefix + item.key(), item.value(), true});
  for (const auto& child : module.named_children()) collect_state(*child.value(), prefix + child.key() + ".", out);
}
}  // namespace

std::vector<StateEntry> state_entries(const torch::nn::Module& module) {
  std::vector<StateEntry> out;
  collect_state(module, "", out);
  return out;
}

int64_t count_parameters(const torch::nn::Module& module) {
  int64_t total = 0;
  for (const auto& entry : state_entries(module))
    if (!entry.is_buffer) total += entry.tensor.numel();
  return total;
}

}  // namespace expnet
