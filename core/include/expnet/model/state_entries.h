// A module's state_dict entries in PyTorch's order, and parameter counts.
#pragma once

#include <torch/nn/module.h>
#include <cstdint>
#include <string>
#include <vector>

namespace expnet {

// One state_dict entry, in PyTorch's state_dict order (per module: its own
// parameters, then its own buffers, then its children).
struct StateEntry {
  std::string name;
  torch::Tensor tensor;
  bool is_buffer = false;
};
std::vector<StateEntry> state_entries(const torch::nn::Module& module);
// Sum of parameter (not buffer) elements, as the reference counts them.
int64_t count_parameters(const torch::nn::Module& module);

}  // namespace expnet
