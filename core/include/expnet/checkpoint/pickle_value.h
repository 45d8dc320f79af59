// The values of the pickle machine (expnet/checkpoint/unpickler.h reads them,
// pickler.h writes them): plain Python data and the tensors of torch.save
// archives. No LibTorch here: tensors are described (storage key, dtype,
// offset, sizes, strides), the torch layer (pth_file.h) reads their bytes.
//
// Safety: only an allow-list of globals can be named (see allowed_globals());
// any other GLOBAL/STACK_GLOBAL (os.system, builtins.eval, ...) is refused
// with a PickleError naming it; nothing is ever called. Hostile input is
// bounded: lengths past the end of the input, memo indices and MARK nesting
// are checked, what the values cost is charged to a Budget proportional to the
// input's size (docs/checkpoints.md, "Limits"), and values live in an arena (no
// recursive destruction, cycles cannot leak).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace expnet::pickle {

class PickleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// A dict key whose identity passes the length dict_set was given.
class KeyTooLargeError : public PickleError {
 public:
  using PickleError::PickleError;
};

// Element types of torch storages we can read ("FloatStorage" -> Float32 ...).
enum class DType { Float32, Float64, Float16, BFloat16, Int64, Int32, Int16, Int8, UInt8, Bool };
const char* dtype_name(DType dtype);  // PyTorch's name: "float32", "int64", "bool"...
size_t dtype_size(DType dtype);
std::optional<DType> dtype_from_storage_class(std::string_view class_name);  // "FloatStorage"
const char* storage_class(DType dtype);                                     // "FloatStorage"

// A storage named by a persistent id: ('storage', torch.FloatStorage, key, location, numel).
struct StorageRef {
  std::string key;       // record "data/<key>" of the archive
  DType dtype = DType::Float32;
  std::string location;  // "cpu", "cuda:0": data is loaded on the CPU whatever it says
  int64_t numel = 0;
};

// torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, hooks)
struct TensorInfo {
  std::shared_ptr<const StorageRef> storage;
  int64_t storage_offset = 0;
  std::vector<int64_t> sizes, strides;
  bool requires_grad = false;
  bool parameter = false;  // wrapped by torch._utils._rebuild_parameter
  int64_t numel() const;
  // Throws PickleError when the view reaches outside its storage or is malformed.
  void validate(const std::string& where) const;
};

enum class Kind { None, Bool, Int, Float, Str, Bytes, List, Tuple, Dict, Set, Global, Storage, Tensor };
const char* kind_name(Kind kind);

struct Value {
  Kind kind = Kind::None;
  bool boolean = false;
  int64_t integer = 0;
  double real = 0.0;
  std::string text;                                   // Str (UTF-8), Bytes, Global ("module.name")
  std::vector<Value*> items;                          // List, Tuple, Set
  std::vector<std::pair<Value*, Value*>> entries;     // Dict, in insertion order
  bool ordered_dict = false;                          // collections.OrderedDict
  Value* state = nullptr;                             // BUILD state (OrderedDict: {'_metadata': ...})
  std::shared_ptr<const StorageRef> storage;          // Storage
  TensorInfo tensor;                                  // Tensor

  bool is(Kind k) const { return kind == k; }
  // Dict lookup by string key; nullptr when absent or not a Dict.
  const Value* find(std::string_view key) const;
  // Sets or replaces (Python semantics: equal keys replace). Throws PickleError
  // for unhashable keys, KeyTooLargeError for keys whose identity (shared
  // sub-objects expanded) exceeds `max_key_bytes`. Returns the identity's
  // length: what hashing the key cost, and at most what storing it holds.
  size_t dict_set(Value* key, Value* value, size_t max_key_bytes = kMaxKeyBytes);
  static constexpr size_t kMaxKeyBytes = size_t{1} << 20;

 private:
  friend class Arena;
  std::unordered_map<std::string, size_t> index_;  // hash key -> entries position
};

// Owns every Value of a document; pointers stay valid while it lives.
class Arena {
 public:
  Value* make(Kind kind);
  Value* none() { return make(Kind::None); }
  Value* boolean(bool v);
  Value* integer(int64_t v);
  Value* real(double v);
  Value* str(std::string v);
  Value* bytes(std::string v);
  Value* list(std::vector<Value*> items = {});
  Value* tuple(std::vector<Value*> items = {});
  Value* dict(bool ordered = false);
  Value* global(const std::string& qualified_name);
  Value* tensor(TensorInfo info);
  size_t size() const { return values_.size(); }

 private:
  std::deque<Value> values_;
};

// What building one document may cost, in estimated bytes of memory: each
// value, each element copied into a container or onto the stack, each dict
// key's identity. The unpickler charges before it copies, so time and memory
// stay proportional to the limit whatever the input shares or repeats.
class Budget {
 public:
  // Bytes of one value in the arena (the Value and its share of the deque).
  static constexpr size_t kValueBytes = sizeof(Value) + 8;
  static constexpr size_t kPointerBytes = sizeof(Value*);
  static constexpr size_t kEntryBytes = 2 * sizeof(Value*) + 64;  // dict entry + its index node

  explicit Budget(size_t limit_bytes) : limit_(limit_bytes) {}
  // False (and nothing charged) when `bytes` more would pass the limit.
  bool charge(size_t bytes) {
    if (bytes > limit_ - used_) return false;
    used_ += bytes;
    return true;
  }
  bool charge(size_t count, size_t bytes_each) {
    return bytes_each == 0 || count <= (limit_ - used_) / bytes_each ? charge(count * bytes_each) : false;
  }
  size_t used() const { return used_; }
  size_t limit() const { return limit_; }

 private:
  size_t limit_, used_ = 0;
};

}  // namespace expnet::pickle
