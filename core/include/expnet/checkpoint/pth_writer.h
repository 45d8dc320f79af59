// Writing .pth files torch.load reads, and our checkpoint layout in them:
//   {"model_state_dict": OrderedDict(name -> tensor), "expnet_config": JSON text,
//    "expnet_vocabulary": JSON text (optional), "expnet_decoding": JSON text (optional),
//    "expnet_training_state": anything (optional)}
// (docs/checkpoints.md).
#pragma once

#include <ATen/Tensor.h>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include "expnet/checkpoint/pickle_value.h"
#include "expnet/checkpoint/pth_file.h"

namespace expnet {

// Builds the value tree of a .pth file and writes it (zip format, torch.save's
// conventions). Tensors are moved to the CPU; tensors sharing a storage share it in the file.
class PthWriter {
 public:
  PthWriter();
  ~PthWriter();
  pickle::Arena& arena();
  pickle::Value* tensor(const at::Tensor& tensor);
  pickle::Value* ordered_dict(const NamedTensors& tensors);
  // Atomic (expnet/system/atomic_file.h). Throws std::runtime_error naming the
  // file and the reason (a full disk, the file size limit); never terminates the
  // process, and leaves no temporary file and the previous `path` intact.
  void write(const std::string& path, const pickle::Value& root);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct CheckpointMetadata {
  std::string config_json;                    // required: a JSON object
  std::optional<std::string> vocabulary_json;  // Vocabulary::to_json()
  // CarriedDecoding::to_json() (expnet/decode/carried_decoding.h): checked, and
  // written only when it sets a key.
  std::optional<std::string> decoding_json;
  // Optional extra "expnet_training_state" value built with the writer.
  std::function<pickle::Value*(PthWriter&)> training_state;
};

// Writes our layout (see the top of this file).
void save_checkpoint(const std::string& path, const NamedTensors& model_state, const CheckpointMetadata& metadata);

// Our metadata, when the file is one of ours (empty optionals otherwise).
// "expnet_decoding" that is not text is an error naming the file.
struct StoredMetadata {
  std::optional<std::string> config_json, vocabulary_json, decoding_json;
};
StoredMetadata read_metadata(const PthFile& file);

}  // namespace expnet
