// State dicts inside .pth files: finding one, loading it into a module by
// name, reading all its tensors, and a module's own state in PyTorch's order.
#pragma once

#include <torch/nn/module.h>
#include <string>
#include <utility>
#include <vector>
#include "expnet/checkpoint/pickle_value.h"
#include "expnet/checkpoint/pth_file.h"

namespace expnet {

// A state_dict found inside a checkpoint's value tree.
struct StateDictRef {
  std::string wrapper;  // "model_state_dict", "state_dict", "model" (Swin ImageNet) or "" (bare)
  std::vector<std::pair<std::string, const pickle::TensorInfo*>> entries;
};
// Accepts {"model_state_dict": sd, ...}, {"state_dict": sd}, {"model": sd} or a bare sd.
// Throws std::runtime_error naming `source` when none is found.
StateDictRef find_state_dict(const pickle::Value& root, const std::string& source);

struct LoadOptions {
  bool allow_missing = false;     // module entries absent from the checkpoint keep their values
  bool allow_unexpected = false;  // checkpoint entries the module lacks are skipped
  std::string add_prefix;         // prepended to checkpoint names (e.g. "swin_transf.")
  std::vector<std::string> ignore_prefixes;  // checkpoint names to skip (after add_prefix)
  // With allow_missing: module parameters (not buffers) under this prefix must still be present.
  std::string require_parameters_under;
};

struct LoadReport {
  std::string wrapper;
  std::vector<std::string> loaded, missing, unexpected, ignored;
};

// Loads a checkpoint's state_dict into `module` by name (named_parameters +
// named_buffers). A missing, unexpected (unless allowed) or mis-shaped entry
// throws std::runtime_error listing the names. Memory: tensor data is read one
// storage at a time and copied straight into the module's tensors.
LoadReport load_state_dict(torch::nn::Module& module, const std::string& path, const LoadOptions& options = {});

// Microsoft's Swin ImageNet checkpoints ({"model": ...}, names without the
// "swin_transf." prefix) into the backbone of an ExpansionNet model: head.*
// ignored, the rest of the model (and backbone buffers absent from the file,
// which the module computes) keeps its values; a missing backbone parameter
// is an error.
LoadReport load_swin_backbone(torch::nn::Module& model, const std::string& path,
                              const std::string& backbone_prefix = "swin_transf.");

// All tensors of a checkpoint's state_dict, in file order, storages shared.
NamedTensors read_state_dict(const std::string& path, std::string* wrapper = nullptr);

// A module's state in PyTorch's state_dict order (per module: parameters, then buffers).
NamedTensors module_state(const torch::nn::Module& module);

}  // namespace expnet
