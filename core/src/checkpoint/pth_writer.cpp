// Writing .pth files that torch.load reads: our protocol-2 pickler for
// data.pkl (torch.save's conventions) and PyTorchStreamWriter for the zip
// archive, streamed into an atomic file so a big model is never held twice.
#include <torch/torch.h>

#include <caffe2/serialize/inline_container.h>
#include <nlohmann/json.hpp>

#include <ostream>
#include <unordered_map>

#include "expnet/checkpoint/pickler.h"
#include "expnet/system/atomic_file.h"
#include "expnet/checkpoint/pth_file.h"
#include "expnet/checkpoint/pth_writer.h"
#include "expnet/decode/carried_decoding.h"

namespace expnet {
namespace {

std::optional<pickle::DType> to_dtype(at::ScalarType type) {
  using pickle::DType;
  for (const DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int64, DType::Int32,
                        DType::Int16, DType::Int8, DType::UInt8, DType::Bool})
    if (to_scalar_type(d) == type) return d;
  return std::nullopt;
}

}  // namespace

struct PthWriter::Impl {
  pickle::Arena arena;
  struct Stored {
    std::string key;
    at::Tensor keep;  // keeps the storage alive until written
    std::shared_ptr<pickle::StorageRef> ref;
  };
  std::unordered_map<const void*, size_t> by_storage;  // StorageImpl* -> stored index
  std::vector<Stored> stored;
};

PthWriter::PthWriter() : impl_(std::make_unique<Impl>()) {}
PthWriter::~PthWriter() = default;
pickle::Arena& PthWriter::arena() { return impl_->arena; }

pickle::Value* PthWriter::tensor(const at::Tensor& input) {
  if (!input.defined()) return impl_->arena.none();
  const auto dtype = to_dtype(input.scalar_type());
  if (!dtype) throw std::runtime_error("cannot save a tensor of type " + std::string(c10::toString(input.scalar_type())));
  at::Tensor t = input.device().is_cpu() ? input : input.cpu();
  if (t.is_sparse() || t.is_quantized() || !t.has_storage())
    throw std::runtime_error("cannot save sparse, quantized or storage-less tensors");
  const void* id = t.storage().unsafeGetStorageImpl();
  auto [it, inserted] = impl_->by_storage.emplace(id, impl_->stored.size());
  if (inserted) {
    auto ref = std::make_shared<pickle::StorageRef>();
    ref->key = std::to_string(impl_->stored.size());
    ref->dtype = *dtype;
    ref->location = "cpu";
    ref->numel = static_cast<int64_t>(t.storage().nbytes() / pickle::dtype_size(*dtype));
    impl_->stored.push_back({ref->key, t, ref});
  } else if (impl_->stored[it->second].ref->dtype != *dtype) {
    throw std::runtime_error("cannot save two tensors that view one storage as different types");
  }
  pickle::TensorInfo info;
  info.storage = impl_->stored[it->second].ref;
  info.storage_offset = t.storage_offset();
  info.sizes = t.sizes().vec();
  info.strides = t.strides().vec();
  info.requires_grad = false;
  return impl_->arena.tensor(std::move(info));
}

pickle::Value* PthWriter::ordered_dict(const NamedTensors& tensors) {
  pickle::Value* dict = impl_->arena.dict(true);
  for (const auto& [name, value] : tensors) dict->dict_set(impl_->arena.str(name), tensor(value));
  return dict;
}

void PthWriter::write(const std::string& path, const pickle::Value& root) {
  const std::string program = pickle::write(root);
  write_file_atomic(path, [&](std::ostream& os) {
    // LibTorch's writer throws on a short write and then finishes the archive
    // again in its destructor, where a second throw is std::terminate. So its
    // writer function never fails: the stream keeps the first error (and
    // swallows the rest) for write_file_atomic to report once the archive is done.
    caffe2::serialize::PyTorchStreamWriter writer([&os](const void* data, size_t size) -> size_t {
      if (os) os.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
      return size;
    });
    writer.writeRecord("data.pkl", program.data(), program.size());
    for (const auto& s : impl_->stored) {
      const auto& storage = s.keep.storage();
      writer.writeRecord("data/" + s.key, storage.data(), storage.nbytes());
    }
    writer.writeEndOfFile();
  });
}

void save_checkpoint(const std::string& path, const NamedTensors& model_state, const CheckpointMetadata& metadata) {
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(metadata.config_json);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": the model config is not valid JSON (" + std::string(e.what()) + ")");
  }
  if (!config.is_object()) throw std::runtime_error(path + ": the model config must be a JSON object");
  std::optional<CarriedDecoding> decoding;
  if (metadata.decoding_json) decoding = CarriedDecoding::from_json(*metadata.decoding_json, path + " (decoding options)");
  PthWriter writer;
  auto& arena = writer.arena();
  pickle::Value* root = arena.dict();
  root->dict_set(arena.str("model_state_dict"), writer.ordered_dict(model_state));
  root->dict_set(arena.str("expnet_config"), arena.str(metadata.config_json));
  if (metadata.vocabulary_json) root->dict_set(arena.str("expnet_vocabulary"), arena.str(*metadata.vocabulary_json));
  if (decoding && !decoding->empty()) root->dict_set(arena.str("expnet_decoding"), arena.str(decoding->to_json()));
  if (metadata.training_state) root->dict_set(arena.str("expnet_training_state"), metadata.training_state(writer));
  writer.write(path, *root);
}

StoredMetadata read_metadata(const PthFile& file) {
  StoredMetadata out;
  const auto& root = file.root();
  if (const auto* v = root.find("expnet_config"); v && v->is(pickle::Kind::Str)) out.config_json = v->text;
  if (const auto* v = root.find("expnet_vocabulary"); v && v->is(pickle::Kind::Str)) out.vocabulary_json = v->text;
  if (const auto* v = root.find("expnet_decoding")) {
    if (!v->is(pickle::Kind::Str))
      throw std::runtime_error(file.path() + ": 'expnet_decoding' is " + pickle::describe(*v, 1) +
                               ", not the JSON text of decoding options; rewrite it with `expnet checkpoint export "
                               "--decoding JSON` (docs/checkpoints.md)");
    out.decoding_json = v->text;
  }
  return out;
}

}  // namespace expnet
