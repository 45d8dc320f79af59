// PyTorch checkpoints (.pth): reading torch.save files (zip archives and the
// legacy non-zip format) with the restricted unpickler (expnet/pickle.h),
// loading a state_dict into a module by name, and writing our checkpoints,
// which torch.load reads. Layout of ours (docs/checkpoints.md):
//   {"model_state_dict": OrderedDict(name -> tensor),
//    "expnet_config": JSON text of the model config,
//    "expnet_vocabulary": JSON text of the vocabulary (optional),
//    "expnet_training_state": anything (optional)}
#pragma once

#include <ATen/Tensor.h>
#include <torch/nn/module.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "expnet/pickle.h"

namespace expnet {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// An opened .pth file. Tensor data stays on disk until asked for.
class PthFile {
 public:
  // Throws std::runtime_error naming the file and the reason (not a checkpoint,
  // truncated, refused global...).
  explicit PthFile(const std::string& path);
  ~PthFile();
  PthFile(const PthFile&) = delete;
  PthFile& operator=(const PthFile&) = delete;

  const std::string& path() const;
  const char* format() const;  // "zip" or "legacy"
  const pickle::Value& root() const;
  const std::vector<std::shared_ptr<const pickle::StorageRef>>& storages() const;

  // The tensor described by `info`. Storages are read once and cached, so
  // tensors that view one storage share it (as after torch.load).
  at::Tensor tensor(const pickle::TensorInfo& info);
  // A fresh uncached copy of one storage as a 1-D tensor of its dtype.
  at::Tensor read_storage(const pickle::StorageRef& storage);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

at::ScalarType to_scalar_type(pickle::DType dtype);
std::string dtype_name(at::ScalarType type);  // PyTorch's name: "float32", "int64", ...

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

// Builds the value tree of a .pth file and writes it (zip format, torch.save's
// conventions). Tensors are moved to the CPU; tensors sharing a storage share it in the file.
class PthWriter {
 public:
  PthWriter();
  ~PthWriter();
  pickle::Arena& arena();
  pickle::Value* tensor(const at::Tensor& tensor);
  pickle::Value* ordered_dict(const NamedTensors& tensors);
  // Atomic (expnet/atomic_file.h). Throws std::runtime_error naming the file.
  void write(const std::string& path, const pickle::Value& root);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct CheckpointMetadata {
  std::string config_json;                    // required: a JSON object
  std::optional<std::string> vocabulary_json;  // Vocabulary::to_json()
  // Optional extra "expnet_training_state" value built with the writer.
  std::function<pickle::Value*(PthWriter&)> training_state;
};

// Writes our layout (see the top of this file).
void save_checkpoint(const std::string& path, const NamedTensors& model_state, const CheckpointMetadata& metadata);

// Our metadata, when the file is one of ours (empty optionals otherwise).
struct StoredMetadata {
  std::optional<std::string> config_json, vocabulary_json;
};
StoredMetadata read_metadata(const PthFile& file);

}  // namespace expnet
