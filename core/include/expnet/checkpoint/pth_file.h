// PyTorch checkpoints (.pth): reading torch.save files (zip archives and the
// legacy non-zip format) with the restricted unpickler (unpickler.h). Tensor
// data stays on disk until asked for. Loading by name: state_dict.h; writing:
// pth_writer.h (docs/checkpoints.md).
#pragma once

#include <ATen/Tensor.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "expnet/checkpoint/pickle_value.h"

namespace expnet {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// An opened .pth file. Tensor data stays on disk until asked for.
class PthFile {
 public:
  // Throws std::runtime_error naming the file and the reason (not a checkpoint,
  // truncated, refused global...).
  explicit PthFile(const std::string& path);
  ~PthFile();

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

}  // namespace expnet
