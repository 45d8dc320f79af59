// Reading .pth files: zip archives (torch.save since 1.6) through LibTorch's
// PyTorchStreamReader, the legacy format (pickles back to back, then raw
// storages) by hand. The pickle programs go through the restricted unpickler.
#include <torch/torch.h>

#include <caffe2/serialize/inline_container.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <unordered_map>

#include "expnet/checkpoint/pth_file.h"
#include "expnet/checkpoint/unpickler.h"
#include "expnet/checkpoint/zip_entries.h"
#include "expnet/system/input_file.h"

namespace expnet {
namespace {

using pickle::DType;

std::runtime_error file_error(const std::string& path, const std::string& why) {
  return std::runtime_error(path + ": " + why);
}

// Checked as a regular file first (input_file.h): a FIFO named as a checkpoint never blocks.
std::string read_prefix(const std::string& path, size_t n) {
  const int fd = open_input_file(path, "checkpoint");
  std::string out(n, '\0');
  const ssize_t got = ::pread(fd, out.data(), n, 0);
  const int error = errno;
  ::close(fd);
  if (got < 0) throw file_error(path, std::string("cannot read the file (") + std::strerror(error) + ")");
  out.resize(static_cast<size_t>(got));
  return out;
}

std::string read_all(const std::string& path) { return read_input_file(path, "checkpoint"); }

// The first line of a c10::Error message; the rest is a C++ backtrace.
std::string first_line(const char* what) {
  std::string s(what);
  const size_t nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

int64_t storage_bytes(const pickle::StorageRef& ref, const std::string& path) {
  int64_t bytes = 0;
  if (__builtin_mul_overflow(ref.numel, static_cast<int64_t>(pickle::dtype_size(ref.dtype)), &bytes))
    throw file_error(path, "storage '" + ref.key + "' is impossibly large");
  return bytes;
}

// torch.save's legacy format starts with pickle.dumps(0x1950a86a20f9469cfc6c, protocol=2).
constexpr char kLegacyMagic[] = "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19\x2e";
constexpr size_t kLegacyMagicSize = sizeof(kLegacyMagic) - 1;

// data.pkl is inflated whole and unpickled: real ones are kilobytes to a few
// megabytes (no tensor data), so this leaves room (docs/checkpoints.md).
constexpr uint64_t kMaxDataPklBytes = uint64_t{64} << 20;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

at::ScalarType to_scalar_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return at::kFloat;
    case DType::Float64: return at::kDouble;
    case DType::Float16: return at::kHalf;
    case DType::BFloat16: return at::kBFloat16;
    case DType::Int64: return at::kLong;
    case DType::Int32: return at::kInt;
    case DType::Int16: return at::kShort;
    case DType::Int8: return at::kChar;
    case DType::UInt8: return at::kByte;
    case DType::Bool: return at::kBool;
  }
  return at::kFloat;
}

std::string dtype_name(at::ScalarType type) {
  for (const DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int64, DType::Int32,
                        DType::Int16, DType::Int8, DType::UInt8, DType::Bool})
    if (to_scalar_type(d) == type) return pickle::dtype_name(d);
  return c10::toString(type);
}

struct PthFile::Impl {
  std::string path;
  bool zip = true;
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> reader;
  std::string legacy_bytes;                                   // whole legacy file
  std::unordered_map<std::string, size_t> legacy_offsets;     // key -> data offset in legacy_bytes
  pickle::Document doc;
  std::unordered_map<std::string, at::Tensor> cache;           // key -> 1-D storage tensor
  std::unordered_map<std::string, uint32_t> crcs;              // zip record -> the CRC-32 the archive gives

  // LibTorch's zip reader does not check CRCs (PyTorch builds miniz without
  // them): a flipped byte in a tensor record would load silently. Checked
  // here, as zip readers do.
  void check_crc(const std::string& record, const void* bytes, size_t size) const {
    const auto it = crcs.find(record);
    if (it == crcs.end()) return;  // a zip64 record past minizip's reach: LibTorch bounds it
    const auto crc = static_cast<uint32_t>(crc32_z(0, static_cast<const Bytef*>(bytes), size));
    if (crc != it->second)
      throw file_error(path, "record '" + record + "' is damaged (its CRC-32 is " + std::to_string(crc) +
                                 ", the archive says " + std::to_string(it->second) +
                                 "): the file was corrupted; get or save it again");
  }

  void open_zip() {
    // Every record's declared size and ratio, proven before LibTorch inflates
    // anything (ZipError names the file, the entry and what to do).
    for (const ZipEntry& entry : read_zip_entries_file(path)) {
      // LibTorch names records without the archive's folder ("data/0" for "archive/data/0").
      const size_t slash = entry.name.find('/');
      crcs[slash == std::string::npos ? entry.name : entry.name.substr(slash + 1)] = entry.crc;
      if ((entry.name == "data.pkl" || ends_with(entry.name, "/data.pkl")) && entry.size > kMaxDataPklBytes)
        throw file_error(path, "its " + entry.name + " holds " + std::to_string(entry.size) + " bytes (at most " +
                                   std::to_string(kMaxDataPklBytes >> 20) +
                                   " MiB: a real one has no tensor data and stays far below); the file is corrupt or "
                                   "hostile, re-save the checkpoint with torch.save");
    }
    try {
      reader = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
    } catch (const std::logic_error&) {
      // LibTorch parses the archive's version record with std::stoull: "stoull" alone says nothing.
      throw file_error(path, "its archive version record is not a version number LibTorch reads; the file is "
                             "corrupt or was not written by torch.save: save the checkpoint again");
    } catch (const std::exception& e) {
      throw file_error(path, "not a readable PyTorch zip archive (" + first_line(e.what()) +
                                 "); the file may be truncated or corrupt");
    }
    if (!reader->hasRecord("data.pkl"))
      throw file_error(path, "zip archive without data.pkl: not a torch.save checkpoint (a TorchScript model?)");
    at::DataPtr data;
    size_t size = 0;
    try {
      std::tie(data, size) = reader->getRecord("data.pkl");
    } catch (const std::exception& e) {
      throw file_error(path, "cannot read data.pkl (" + first_line(e.what()) + ")");
    }
    check_crc("data.pkl", data.get(), size);
    doc = pickle::parse(std::string_view(static_cast<const char*>(data.get()), size), path + ":data.pkl");
  }

  void open_legacy() {
    legacy_bytes = read_all(path);
    const std::string_view all(legacy_bytes);
    size_t pos = kLegacyMagicSize, used = 0;
    // The file's pickles share one budget: all four stay alive while it is read.
    pickle::Limits limits;
    auto next = [&](const char* what) {
      pickle::Document d = pickle::parse_prefix(all.substr(pos), path + ":" + what, &used, limits);
      pos += used;
      limits.max_budget_bytes -= std::min(limits.max_budget_bytes, d.budget_used);
      limits.min_budget_bytes = std::min(limits.min_budget_bytes, limits.max_budget_bytes);
      return d;
    };
    const pickle::Document version = next("protocol version");
    if (!version.root->is(pickle::Kind::Int) || version.root->integer != 1001)
      throw file_error(path, "unsupported legacy checkpoint protocol version");
    const pickle::Document sys_info = next("sys_info");
    if (const auto* le = sys_info.root->find("little_endian"); le && le->is(pickle::Kind::Bool) && !le->boolean)
      throw file_error(path, "big-endian legacy checkpoints are not supported");
    doc = next("data");
    const pickle::Document keys = next("storage keys");
    if (!keys.root->is(pickle::Kind::List)) throw file_error(path, "legacy storage key list is not a list");
    std::unordered_map<std::string, const pickle::StorageRef*> by_key;
    for (const auto& s : doc.storages) by_key[s->key] = s.get();
    for (const pickle::Value* key : keys.root->items) {
      if (!key->is(pickle::Kind::Str)) throw file_error(path, "legacy storage key is not a str");
      const auto it = by_key.find(key->text);
      if (it == by_key.end()) throw file_error(path, "legacy storage '" + key->text + "' is not used by the data");
      if (all.size() - pos < 8) throw file_error(path, "truncated: storage '" + key->text + "' is missing");
      int64_t numel = 0;
      std::memcpy(&numel, all.data() + pos, 8);
      pos += 8;
      if (numel != it->second->numel)
        throw file_error(path, "legacy storage '" + key->text + "' has " + std::to_string(numel) +
                                   " elements, the data says " + std::to_string(it->second->numel));
      const int64_t bytes = storage_bytes(*it->second, path);
      if (static_cast<uint64_t>(bytes) > all.size() - pos)
        throw file_error(path, "truncated: storage '" + key->text + "' needs " + std::to_string(bytes) + " bytes");
      legacy_offsets[key->text] = pos;
      pos += static_cast<size_t>(bytes);
    }
  }
};

PthFile::PthFile(const std::string& path) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  const std::string head = read_prefix(path, kLegacyMagicSize);
  if (head.empty()) throw file_error(path, "empty file: not a PyTorch checkpoint");
  try {
    if (head.rfind("PK\x03\x04", 0) == 0) {
      impl_->open_zip();
    } else if (head == std::string(kLegacyMagic, kLegacyMagicSize)) {
      impl_->zip = false;
      impl_->open_legacy();
    } else {
      throw file_error(path, "not a PyTorch checkpoint (neither a torch.save zip archive nor the legacy format)");
    }
  } catch (const pickle::PickleError& e) {
    throw std::runtime_error(e.what());
  }
}

PthFile::~PthFile() = default;

const std::string& PthFile::path() const { return impl_->path; }
const char* PthFile::format() const { return impl_->zip ? "zip" : "legacy"; }
const pickle::Value& PthFile::root() const { return *impl_->doc.root; }
const std::vector<std::shared_ptr<const pickle::StorageRef>>& PthFile::storages() const { return impl_->doc.storages; }

at::Tensor PthFile::read_storage(const pickle::StorageRef& ref) {
  const int64_t bytes = storage_bytes(ref, impl_->path);
  const auto type = to_scalar_type(ref.dtype);
  if (!impl_->zip) {
    const auto it = impl_->legacy_offsets.find(ref.key);
    if (it == impl_->legacy_offsets.end()) throw file_error(impl_->path, "storage '" + ref.key + "' is missing");
    at::Tensor out = at::empty({ref.numel}, at::TensorOptions().dtype(type));
    std::memcpy(out.data_ptr(), impl_->legacy_bytes.data() + it->second, static_cast<size_t>(bytes));
    return out;
  }
  const std::string record = "data/" + ref.key;
  at::DataPtr data;
  size_t size = 0;
  try {
    std::tie(data, size) = impl_->reader->getRecord(record);
  } catch (const std::exception& e) {
    throw file_error(impl_->path, "cannot read storage record '" + record + "' (" + first_line(e.what()) + ")");
  }
  if (size < static_cast<uint64_t>(bytes))
    throw file_error(impl_->path, "storage record '" + record + "' holds " + std::to_string(size) + " bytes, " +
                                      std::to_string(bytes) + " expected (truncated or corrupt)");
  impl_->check_crc(record, data.get(), size);
  // The record's buffer becomes the storage: no further copy.
  c10::Storage storage(c10::Storage::use_byte_size_t(), static_cast<size_t>(bytes), std::move(data), nullptr, false);
  return at::empty({0}, at::TensorOptions().dtype(type)).set_(storage, 0, {ref.numel}, {1});
}

at::Tensor PthFile::tensor(const pickle::TensorInfo& info) {
  info.validate(impl_->path);
  auto& cached = impl_->cache[info.storage->key];
  if (!cached.defined()) cached = read_storage(*info.storage);
  return at::empty({0}, cached.options()).set_(cached.storage(), info.storage_offset, info.sizes, info.strides);
}

}  // namespace expnet
