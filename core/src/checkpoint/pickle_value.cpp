// Values of the pickle machine: dtypes, tensor views, dict keys, the arena.
#include <cmath>
#include <cstring>
#include <limits>

#include "expnet/checkpoint/pickle_value.h"
#include "expnet/checkpoint/unpickler.h"
#include "expnet/checkpoint/pickler.h"

namespace expnet::pickle {
namespace {

struct DTypeRow {
  DType dtype;
  const char* name;
  const char* storage;
  size_t size;
};

constexpr DTypeRow kDTypes[] = {
    {DType::Float32, "float32", "FloatStorage", 4},   {DType::Float64, "float64", "DoubleStorage", 8},
    {DType::Float16, "float16", "HalfStorage", 2},    {DType::BFloat16, "bfloat16", "BFloat16Storage", 2},
    {DType::Int64, "int64", "LongStorage", 8},        {DType::Int32, "int32", "IntStorage", 4},
    {DType::Int16, "int16", "ShortStorage", 2},       {DType::Int8, "int8", "CharStorage", 1},
    {DType::UInt8, "uint8", "ByteStorage", 1},        {DType::Bool, "bool", "BoolStorage", 1},
};

const DTypeRow& row(DType dtype) {
  for (const auto& r : kDTypes)
    if (r.dtype == dtype) return r;
  return kDTypes[0];
}

enum class KeyHash { Ok, Unhashable, TooLarge };

// Python dict key identity: 1, 1.0 and True are the same key. A tuple that
// shares sub-objects expands here, so the identity's length is capped.
KeyHash hash_key(const Value& v, std::string& out, int depth, size_t max_bytes) {
  if (out.size() > max_bytes) return KeyHash::TooLarge;
  if (depth > 64) return KeyHash::Unhashable;
  switch (v.kind) {
    case Kind::None: out += 'N'; return KeyHash::Ok;
    case Kind::Bool: out += 'I' + std::to_string(v.boolean ? 1 : 0) + ';'; return KeyHash::Ok;
    case Kind::Int: out += 'I' + std::to_string(v.integer) + ';'; return KeyHash::Ok;
    case Kind::Float: {
      const double r = v.real;
      if (std::isfinite(r) && r == std::floor(r) && std::fabs(r) < 9.0e18) {
        out += 'I' + std::to_string(static_cast<int64_t>(r)) + ';';
      } else {
        uint64_t bits = 0;
        std::memcpy(&bits, &r, sizeof bits);
        out += 'F' + std::to_string(bits) + ';';
      }
      return KeyHash::Ok;
    }
    case Kind::Str: case Kind::Bytes: case Kind::Global: {
      if (v.text.size() > max_bytes - out.size()) return KeyHash::TooLarge;
      out += (v.is(Kind::Str) ? 'S' : v.is(Kind::Bytes) ? 'B' : 'G') + std::to_string(v.text.size()) + ':' + v.text;
      return KeyHash::Ok;
    }
    case Kind::Tuple:
      out += "T(";
      for (const Value* item : v.items)
        if (const KeyHash h = hash_key(*item, out, depth + 1, max_bytes); h != KeyHash::Ok) return h;
      out += ')';
      return KeyHash::Ok;
    case Kind::Storage:
    case Kind::Tensor: {  // hashed by identity, as in Python
      char buf[32];
      std::snprintf(buf, sizeof buf, "P%p;", static_cast<const void*>(&v));
      out += buf;
      return KeyHash::Ok;
    }
    default: return KeyHash::Unhashable;
  }
}

bool mul_overflows(int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); }

}  // namespace

// The allow-list of the unpickler (expnet/checkpoint/unpickler.h).
const std::vector<std::string>& allowed_globals() {
  static const std::vector<std::string> kAllowed = {
      "collections.OrderedDict",
      "torch._utils._rebuild_tensor_v2",
      "torch._utils._rebuild_tensor",
      "torch._utils._rebuild_parameter",
      "torch._utils._rebuild_parameter_with_state",
      "torch.FloatStorage",
      "torch.DoubleStorage",
      "torch.HalfStorage",
      "torch.BFloat16Storage",
      "torch.LongStorage",
      "torch.IntStorage",
      "torch.ShortStorage",
      "torch.CharStorage",
      "torch.ByteStorage",
      "torch.BoolStorage",
      "torch.Size",
      "_codecs.encode",  // protocol 2 writes bytes as _codecs.encode(str, 'latin1')
      "builtins.set",
      "builtins.frozenset",
      "builtins.bytes",  // protocol 2 writes b'' as bytes()
  };
  return kAllowed;
}

const char* dtype_name(DType dtype) { return row(dtype).name; }
size_t dtype_size(DType dtype) { return row(dtype).size; }
const char* storage_class(DType dtype) { return row(dtype).storage; }

std::optional<DType> dtype_from_storage_class(std::string_view class_name) {
  for (const auto& r : kDTypes)
    if (class_name == r.storage) return r.dtype;
  return std::nullopt;
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::Str: return "str";
    case Kind::Bytes: return "bytes";
    case Kind::List: return "list";
    case Kind::Tuple: return "tuple";
    case Kind::Dict: return "dict";
    case Kind::Set: return "set";
    case Kind::Global: return "global";
    case Kind::Storage: return "storage";
    case Kind::Tensor: return "tensor";
  }
  return "?";
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (const int64_t s : sizes)
    if (mul_overflows(n, s, &n)) return -1;
  return n;
}

void TensorInfo::validate(const std::string& where) const {
  auto fail = [&](const std::string& why) { throw PickleError(where + ": malformed tensor: " + why); };
  if (!storage) fail("no storage");
  if (sizes.size() != strides.size())
    fail(std::to_string(sizes.size()) + " sizes but " + std::to_string(strides.size()) + " strides");
  if (sizes.size() > 64) fail("more than 64 dimensions");
  if (storage_offset < 0) fail("negative storage offset");
  if (storage->numel < 0) fail("negative storage size");
  int64_t last = storage_offset;  // index of the last element the view touches
  bool empty = false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 0) fail("negative size");
    if (strides[d] < 0) fail("negative stride");
    if (sizes[d] == 0) empty = true;
  }
  if (numel() < 0) fail("element count overflows");
  if (empty) return;
  for (size_t d = 0; d < sizes.size(); ++d) {
    int64_t reach = 0;
    if (mul_overflows(sizes[d] - 1, strides[d], &reach) || __builtin_add_overflow(last, reach, &last))
      fail("view extent overflows");
  }
  if (last >= storage->numel)
    fail("view (offset " + std::to_string(storage_offset) + ", last element " + std::to_string(last) +
         ") reaches past its storage '" + storage->key + "' of " + std::to_string(storage->numel) + " elements");
}

const Value* Value::find(std::string_view key) const {
  if (kind != Kind::Dict) return nullptr;
  std::string hk = 'S' + std::to_string(key.size()) + ':';
  hk.append(key.data(), key.size());
  const auto it = index_.find(hk);
  return it == index_.end() ? nullptr : entries[it->second].second;
}

size_t Value::dict_set(Value* key, Value* value, size_t max_key_bytes) {
  std::string hk;
  const KeyHash h = hash_key(*key, hk, 0, max_key_bytes);
  if (h == KeyHash::Unhashable) throw PickleError(std::string("unhashable dict key of type ") + kind_name(key->kind));
  if (h == KeyHash::TooLarge)
    throw KeyTooLargeError("a dict key expands to more than " + std::to_string(max_key_bytes) +
                      " bytes (a tuple repeating shared sub-objects): the file is corrupt or hostile; a real key is a few "
                      "values, re-save the file with torch.save if it is yours");
  const size_t key_bytes = hk.size();
  const auto [it, inserted] = index_.emplace(std::move(hk), entries.size());
  if (inserted)
    entries.emplace_back(key, value);
  else
    entries[it->second].second = value;
  return key_bytes;
}

Value* Arena::make(Kind kind) {
  values_.emplace_back();
  values_.back().kind = kind;
  return &values_.back();
}
Value* Arena::boolean(bool v) {
  Value* out = make(Kind::Bool);
  out->boolean = v;
  return out;
}
Value* Arena::integer(int64_t v) {
  Value* out = make(Kind::Int);
  out->integer = v;
  return out;
}
Value* Arena::real(double v) {
  Value* out = make(Kind::Float);
  out->real = v;
  return out;
}
Value* Arena::str(std::string v) {
  Value* out = make(Kind::Str);
  out->text = std::move(v);
  return out;
}
Value* Arena::bytes(std::string v) {
  Value* out = make(Kind::Bytes);
  out->text = std::move(v);
  return out;
}
Value* Arena::list(std::vector<Value*> items) {
  Value* out = make(Kind::List);
  out->items = std::move(items);
  return out;
}
Value* Arena::tuple(std::vector<Value*> items) {
  Value* out = make(Kind::Tuple);
  out->items = std::move(items);
  return out;
}
Value* Arena::dict(bool ordered) {
  Value* out = make(Kind::Dict);
  out->ordered_dict = ordered;
  return out;
}
Value* Arena::global(const std::string& qualified_name) {
  Value* out = make(Kind::Global);
  out->text = qualified_name;
  return out;
}
Value* Arena::tensor(TensorInfo info) {
  Value* out = make(Kind::Tensor);
  out->tensor = std::move(info);
  return out;
}

}  // namespace expnet::pickle
