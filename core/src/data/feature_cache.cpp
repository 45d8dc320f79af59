// Backbone feature cache file: writer (resumable, chunked), memory-mapped
// reader, identity checks. Format: docs/datasets.md ("Feature cache").
#include "expnet/data/feature_cache.h"

#include "expnet/model/model_config.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "expnet/system/atomic_file.h"
#include "expnet/system/input_file.h"
#include "system/json_fields.h"
#include "expnet/image/image_decode.h"
#include "expnet/image/preprocess.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace expnet {
namespace {

// Fixed part at offset 0 (little-endian): magic, version, reserved, then the
// header JSON's length, the data offset (4096-aligned) and the data length.
constexpr char kMagic[8] = {'E', 'X', 'P', 'N', 'E', 'T', 'F', 'C'};
constexpr char kEndMagic[8] = {'E', 'X', 'P', 'N', 'E', 'T', 'F', 'E'};
constexpr uint32_t kVersion = 1;
constexpr size_t kFixedBytes = 40;
constexpr uint64_t kAlign = 4096;

struct Fixed {
  uint64_t header_bytes = 0, data_offset = 0, data_bytes = 0;
};

std::runtime_error io_error(const std::string& what, const std::string& path) {
  return std::runtime_error(what + " '" + path + "': " + std::strerror(errno));
}

void put_u32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_u64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t get_u64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint32_t get_u32(const unsigned char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint64_t data_bytes_of(const FeatureCacheHeader& h) {
  return static_cast<uint64_t>(h.rows()) * static_cast<uint64_t>(h.tokens) * static_cast<uint64_t>(h.dim) * 2;
}
int64_t chunk_count(const FeatureCacheHeader& h) { return (h.rows() + h.chunk_rows - 1) / h.chunk_rows; }

// The file's first bytes: fixed part + header JSON + zero padding up to the data.
std::string head_bytes(const FeatureCacheHeader& header, Fixed& fixed) {
  const std::string text = header.to_json();
  fixed.header_bytes = text.size();
  fixed.data_offset = (kFixedBytes + text.size() + kAlign - 1) / kAlign * kAlign;
  fixed.data_bytes = data_bytes_of(header);
  std::string s(kMagic, 8);
  put_u32(s, kVersion);
  put_u32(s, 0);
  put_u64(s, fixed.header_bytes);
  put_u64(s, fixed.data_offset);
  put_u64(s, fixed.data_bytes);
  s += text;
  s.resize(fixed.data_offset, '\0');
  return s;
}

// Parses the fixed part and header of a file of `size` bytes at `p`; throws naming `path`.
FeatureCacheHeader parse_head(const unsigned char* p, uint64_t size, const std::string& path, Fixed& fixed) {
  const std::string what = "'" + path + "' is not an expnet feature cache";
  if (size < kFixedBytes || std::memcmp(p, kMagic, 8) != 0)
    throw std::runtime_error(what + " (wrong magic bytes; make one with expnet features extract)");
  const uint32_t version = get_u32(p + 8);
  if (version != kVersion)
    throw std::runtime_error("feature cache '" + path + "' has format version " + std::to_string(version) +
                             ", this build reads version " + std::to_string(kVersion) + "; extract it again");
  fixed.header_bytes = get_u64(p + 16);
  fixed.data_offset = get_u64(p + 24);
  fixed.data_bytes = get_u64(p + 32);
  if (fixed.header_bytes > size - kFixedBytes || fixed.data_offset < kFixedBytes + fixed.header_bytes ||
      fixed.data_offset > size)
    throw std::runtime_error("feature cache '" + path + "' is truncated or damaged (header cut short); extract it again");
  auto header = FeatureCacheHeader::from_json(
      std::string(reinterpret_cast<const char*>(p + kFixedBytes), fixed.header_bytes), path);
  if (fixed.data_bytes != data_bytes_of(header))
    throw std::runtime_error("feature cache '" + path + "' is damaged (data length does not match its header); extract it again");
  return header;
}

std::string read_prefix(const std::string& path, size_t max_bytes) {
  const int fd = open_input_file(path, "feature cache");
  std::string bytes(max_bytes, '\0');
  const ssize_t got = ::pread(fd, bytes.data(), max_bytes, 0);
  ::close(fd);
  if (got < 0) throw io_error("cannot read feature cache", path);
  bytes.resize(static_cast<size_t>(got));
  return bytes;
}

// Header of a FILE.partial (no trailer yet).
FeatureCacheHeader read_partial_header(const std::string& partial, Fixed& fixed) {
  std::error_code ec;
  const auto size = fs::file_size(partial, ec);
  if (ec) throw std::runtime_error("cannot read '" + partial + "': " + ec.message());
  std::string bytes = read_prefix(partial, kFixedBytes);
  if (bytes.size() < kFixedBytes) throw std::runtime_error("'" + partial + "' is cut short; delete it and extract again");
  const uint64_t header_bytes = get_u64(reinterpret_cast<const unsigned char*>(bytes.data()) + 16);
  if (header_bytes > size) throw std::runtime_error("'" + partial + "' is damaged; delete it and extract again");
  bytes = read_prefix(partial, kFixedBytes + header_bytes);
  auto header = parse_head(reinterpret_cast<const unsigned char*>(bytes.data()), size, partial, fixed);
  if (size != fixed.data_offset + fixed.data_bytes)
    throw std::runtime_error("'" + partial + "' has the wrong size for its header; delete it and extract again");
  return header;
}

struct Sidecar {
  int64_t rows_done = 0;
  std::vector<std::string> checksums;
  std::string header_hash;
};

std::string sidecar_path(const std::string& out) { return out + ".partial.json"; }
std::string partial_path(const std::string& out) { return out + ".partial"; }

void write_sidecar(const std::string& out, const Sidecar& s) {
  write_file_atomic(sidecar_path(out),
                    json{{"rows_done", s.rows_done}, {"checksums", s.checksums}, {"header_hash", s.header_hash}}.dump() + "\n");
}

std::optional<Sidecar> read_sidecar(const std::string& out) {
  std::ifstream in(sidecar_path(out));
  if (!in) return std::nullopt;
  try {
    const json j = json::parse(in);
    Sidecar s;
    s.rows_done = j.at("rows_done").get<int64_t>();
    s.checksums = j.at("checksums").get<std::vector<std::string>>();
    s.header_hash = j.at("header_hash").get<std::string>();
    return s;
  } catch (const std::exception& e) {
    throw std::runtime_error("'" + sidecar_path(out) + "' is damaged (" + e.what() +
                             "); delete it and the .partial file and extract again");
  }
}

void pwrite_all(int fd, const void* data, size_t size, uint64_t offset, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::pwrite(fd, p, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw io_error("cannot write", path);
    }
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

void fsync_folder(const std::string& file) {
  const fs::path folder = fs::path(file).has_parent_path() ? fs::path(file).parent_path() : fs::path(".");
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

class Fd {
 public:
  Fd(const std::string& path, int flags, mode_t mode = 0644) : fd_(::open(path.c_str(), flags, mode)) {
    if (fd_ < 0) throw io_error("cannot open", path);
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

// ---------------------------------------------------------------- header

namespace {

// The header's fields and their JSON keys: to_json and from_json walk this one list.
template <typename Header, typename Visit>
void visit_fields(Header& h, Visit&& visit) {
  visit("model_config_hash", h.model_config_hash);
  visit("backbone", h.backbone);
  visit("source", h.source);
  visit("dataset", h.dataset);
  visit("splits", h.splits);
  visit("image_size", h.image_size);
  visit("tokens", h.tokens);
  visit("dim", h.dim);
  visit("chunk_rows", h.chunk_rows);
  visit("ids", h.ids);
}

}  // namespace

std::string FeatureCacheHeader::to_json() const {
  json out{{"format", "expnet-feature-cache"}, {"version", kVersion}, {"dtype", "float16"}, {"rows", rows()}};
  visit_fields(*this, [&out](const char* key, const auto& value) { out[key] = value; });
  return out.dump();
}

FeatureCacheHeader FeatureCacheHeader::from_json(const std::string& text, const std::string& source) {
  try {
    const json j = json::parse(text);
    if (j.at("format") != "expnet-feature-cache" || j.at("dtype") != "float16")
      throw std::runtime_error("not an expnet float16 feature cache header");
    FeatureCacheHeader h;
    visit_fields(h, [&j](const char* key, auto& value) {
      value = json_fields::member<std::decay_t<decltype(value)>>(j, key, "");
    });
    if (json_fields::member<int64_t>(j, "rows", "") != h.rows() || h.tokens < 1 || h.dim < 1 || h.chunk_rows < 1 || h.ids.empty())
      throw std::runtime_error("inconsistent sizes");
    return h;
  } catch (const std::exception& e) {
    throw std::runtime_error("feature cache '" + source + "': header is damaged (" + e.what() + "); extract it again");
  }
}

std::string FeatureCacheHeader::identity_difference(const FeatureCacheHeader& o) const {
  if (backbone != o.backbone) return "made with other backbone weights (" + backbone + " vs " + o.backbone + ")";
  if (model_config_hash != o.model_config_hash)
    return "made for another backbone configuration (" + model_config_hash + " vs " + o.model_config_hash + ")";
  if (image_size != o.image_size) return "made at another image size";
  if (ids != o.ids) return "holds other images (" + std::to_string(rows()) + " vs " + std::to_string(o.rows()) + " rows)";
  if (chunk_rows != o.chunk_rows) return "made with another batch size";
  return {};
}

uint64_t feature_hash(const void* data, size_t size, uint64_t h) {
  constexpr uint64_t kPrime = 0x100000001b3ULL;
  const auto* p = static_cast<const unsigned char*>(data);
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);  // little-endian hosts (x86-64, arm64)
    h = (h ^ w) * kPrime;
  }
  for (; i < size; ++i) h = (h ^ p[i]) * kPrime;
  return h;
}

std::string feature_config_hash(const ModelConfig& config) {
  const std::string text = config.backbone_json();
  return feature_hash_hex(feature_hash(text.data(), text.size()));
}

std::string feature_hash_hex(uint64_t hash) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

std::string backbone_identity(const torch::nn::Module& backbone) {
  uint64_t h = feature_hash("expnet-backbone", 15);
  auto add = [&](const std::string& name, const torch::Tensor& t) {
    const auto c = t.detach().to(torch::kCPU).contiguous();
    std::ostringstream meta;
    meta << name << ':' << c.sizes() << ':' << c.dtype().name() << ';';
    const std::string m = meta.str();
    h = feature_hash(m.data(), m.size(), h);
    h = feature_hash(c.data_ptr(), c.numel() * c.element_size(), h);
  };
  for (const auto& p : backbone.named_parameters()) add(p.key(), p.value());
  for (const auto& b : backbone.named_buffers()) add(b.key(), b.value());
  return feature_hash_hex(h);
}

// ---------------------------------------------------------------- reader

struct FeatureCacheReader::Impl {
  std::string path;
  FeatureCacheHeader header;
  Fixed fixed;
  int fd = -1;
  const unsigned char* map = nullptr;
  uint64_t size = 0;
  std::vector<uint64_t> checksums;
  std::unordered_map<int64_t, int64_t> rows;  // id -> row

  const uint16_t* row(int64_t r) const {
    return reinterpret_cast<const uint16_t*>(map + fixed.data_offset +
                                             static_cast<uint64_t>(r) * static_cast<uint64_t>(header.tokens * header.dim) * 2);
  }
};

FeatureCacheReader::FeatureCacheReader(const std::string& path) : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  m.path = path;
  if (path.size() > 8 && path.compare(path.size() - 8, 8, ".partial") == 0)
    throw std::runtime_error("'" + path + "' is an unfinished extraction; finish it with expnet features extract ... --resume");
  m.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // a FIFO: refused below, never waited on
  if (m.fd < 0) {
    if (errno == ENOENT && fs::exists(partial_path(path)))
      throw std::runtime_error("feature cache '" + path + "' is not finished (" + partial_path(path) +
                               " exists); resume it with expnet features extract ... --resume");
    throw io_error("cannot open feature cache", path);
  }
  struct stat st {};
  if (::fstat(m.fd, &st) != 0) throw io_error("cannot stat feature cache", path);
  if (!S_ISREG(st.st_mode)) {
    check_input_file(path, "feature cache");  // says what it is instead (a FIFO, a folder, a device)
    throw std::runtime_error("feature cache '" + path + "' is not a regular file");
  }
  m.size = static_cast<uint64_t>(st.st_size);
  if (m.size < kFixedBytes)
    throw std::runtime_error("'" + path + "' is not an expnet feature cache (only " + std::to_string(m.size) +
                             " bytes); extract it again");
  void* p = ::mmap(nullptr, m.size, PROT_READ, MAP_SHARED, m.fd, 0);
  if (p == MAP_FAILED) throw io_error("cannot memory-map feature cache", path);
  m.map = static_cast<const unsigned char*>(p);
  m.header = parse_head(m.map, m.size, path, m.fixed);
  const uint64_t data_end = m.fixed.data_offset + m.fixed.data_bytes;
  const std::string cut = "feature cache '" + path + "' is truncated or damaged (";
  if (m.size < data_end + 16)
    throw std::runtime_error(cut + std::to_string(m.size) + " bytes, the header needs more than " +
                             std::to_string(data_end + 16) + "); extract it again");
  if (std::memcmp(m.map + m.size - 8, kEndMagic, 8) != 0)
    throw std::runtime_error(cut + "end marker missing); extract it again");
  const uint64_t trailer_bytes = get_u64(m.map + m.size - 16);
  if (data_end + trailer_bytes + 16 != m.size) throw std::runtime_error(cut + "size does not match its header); extract it again");
  try {
    const json t = json::parse(std::string(reinterpret_cast<const char*>(m.map + data_end), trailer_bytes));
    for (const auto& c : t.at("chunk_checksums")) m.checksums.push_back(std::stoull(c.get<std::string>(), nullptr, 16));
  } catch (const std::exception& e) {
    throw std::runtime_error(cut + "trailer: " + e.what() + "); extract it again");
  }
  if (static_cast<int64_t>(m.checksums.size()) != chunk_count(m.header))
    throw std::runtime_error(cut + "chunk count does not match); extract it again");
  for (int64_t r = 0; r < m.header.rows(); ++r) m.rows.emplace(m.header.ids[static_cast<size_t>(r)], r);
  // Training reads rows in shuffled order.
  ::madvise(const_cast<unsigned char*>(m.map), m.size, MADV_RANDOM);
}

FeatureCacheReader::~FeatureCacheReader() {
  if (impl_->map) ::munmap(const_cast<unsigned char*>(impl_->map), impl_->size);
  if (impl_->fd >= 0) ::close(impl_->fd);
}

const std::string& FeatureCacheReader::path() const { return impl_->path; }
const FeatureCacheHeader& FeatureCacheReader::header() const { return impl_->header; }
int64_t FeatureCacheReader::file_bytes() const { return static_cast<int64_t>(impl_->size); }

int64_t FeatureCacheReader::row_of(int64_t id) const {
  const auto it = impl_->rows.find(id);
  return it == impl_->rows.end() ? -1 : it->second;
}

at::Tensor FeatureCacheReader::features(const std::vector<int64_t>& rows) const {
  const auto& h = impl_->header;
  auto out = torch::empty({static_cast<int64_t>(rows.size()), h.tokens, h.dim}, torch::kFloat);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= h.rows())
      throw std::out_of_range("feature cache '" + impl_->path + "': row " + std::to_string(rows[i]) + " out of range");
    // The mapping is read-only; from_blob only reads it here.
    const auto half = torch::from_blob(const_cast<uint16_t*>(impl_->row(rows[i])), {h.tokens, h.dim}, torch::kHalf);
    out[static_cast<int64_t>(i)].copy_(half);
  }
  return out;
}

void FeatureCacheReader::require_identity(const FeatureCacheHeader& expected) const {
  const std::string why = impl_->header.identity_difference(expected);
  if (!why.empty())
    throw std::runtime_error("feature cache '" + impl_->path + "' does not fit: it was " + why +
                             "; extract it again with this model and checkpoint");
}

void FeatureCacheReader::verify() const {
  const auto& m = *impl_;
  const uint64_t row_bytes = static_cast<uint64_t>(m.header.tokens * m.header.dim) * 2;
  ::madvise(const_cast<unsigned char*>(m.map), m.size, MADV_SEQUENTIAL);
  for (int64_t c = 0; c < chunk_count(m.header); ++c) {
    const int64_t first = c * m.header.chunk_rows, n = std::min(m.header.chunk_rows, m.header.rows() - first);
    const uint64_t h = feature_hash(m.row(first), static_cast<size_t>(row_bytes * static_cast<uint64_t>(n)));
    if (h != m.checksums[static_cast<size_t>(c)])
      throw std::runtime_error("feature cache '" + m.path + "' is damaged: rows " + std::to_string(first) + "-" +
                               std::to_string(first + n - 1) + " fail their checksum; extract it again");
  }
  ::madvise(const_cast<unsigned char*>(m.map), m.size, MADV_RANDOM);
}

// ---------------------------------------------------------------- writer

int64_t feature_cache_partial_rows(const std::string& out) {
  const auto s = read_sidecar(out);
  return s ? s->rows_done : -1;
}

namespace {

// Decodes and preprocesses images [first, first + n) into one input batch.
at::Tensor load_batch(const std::vector<std::string>& paths, int64_t first, int64_t n, int64_t size) {
  std::vector<cv::Mat> mats;
  for (int64_t k = first; k < first + n; ++k) mats.push_back(load_image_rgb(paths[static_cast<size_t>(k)]));
  return images_to_model_input(mats, static_cast<int>(size));
}

// Backbone output -> contiguous float16 bytes; refuses values float16 cannot hold.
torch::Tensor to_half(const at::Tensor& features, int64_t n, const std::string& out) {
  auto half = features.detach().to(torch::kCPU).to(torch::kHalf).contiguous();
  if (half.size(0) != n) throw std::runtime_error("backbone returned " + std::to_string(half.size(0)) + " rows for " +
                                                  std::to_string(n) + " images");
  if (!torch::isfinite(half).all().item<bool>())
    throw std::runtime_error("feature cache '" + out + "': the backbone gave values that are not finite in float16 "
                             "(beyond +-65504 or NaN); check the checkpoint");
  return half;
}

}  // namespace

FeatureExtractResult extract_feature_cache(FeatureCacheHeader header, const std::vector<std::string>& image_paths,
                                           const std::function<at::Tensor(const at::Tensor&)>& backbone,
                                           const FeatureExtractOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  const std::string& out = options.out;
  const std::string partial = partial_path(out);
  if (out.empty()) throw std::runtime_error("feature cache: no output file given (--out FILE)");
  if (image_paths.size() != header.ids.size() || image_paths.empty())
    throw std::runtime_error("feature cache: " + std::to_string(image_paths.size()) + " images for " +
                             std::to_string(header.ids.size()) + " ids (need at least one image)");
  if (header.chunk_rows < 1) throw std::runtime_error("feature cache: the batch size must be >= 1");
  FeatureExtractResult result;
  result.rows = header.rows();
  if (fs::exists(out)) {
    if (!options.resume)
      throw std::runtime_error("feature cache '" + out + "' already exists; delete it, choose another --out, or pass --resume to check it");
    FeatureCacheReader existing(out);
    existing.require_identity(header);
    result.already_complete = true;
    result.resumed_rows = result.rows;
    return result;
  }
  const auto parent = fs::path(out).parent_path();
  if (!parent.empty() && !fs::is_directory(parent))
    throw std::runtime_error("cannot write feature cache '" + out + "': folder '" + parent.string() + "' does not exist");

  Fixed fixed;
  Sidecar sidecar;
  std::unique_ptr<Fd> fd;
  torch::Tensor first_half;  // the first chunk when it had to be computed to learn tokens x dim
  // A partial whose header never got written (a full disk at its creation) holds no rows: started again.
  std::error_code size_error;
  if (fs::exists(partial) && fs::is_regular_file(partial) && fs::file_size(partial, size_error) < kFixedBytes &&
      !size_error) {
    fs::remove(partial);
    fs::remove(sidecar_path(out), size_error);
  }
  if (fs::exists(partial)) {
    if (!options.resume)
      throw std::runtime_error("an interrupted extraction exists at '" + partial +
                               "'; pass --resume to continue it, or delete it (and " + sidecar_path(out) + ")");
    const auto stored = read_partial_header(partial, fixed);
    const std::string why = stored.identity_difference(header);
    if (!why.empty())
      throw std::runtime_error("'" + partial + "' was " + why + "; delete it (and " + sidecar_path(out) +
                               ") or extract to another --out");
    header = stored;  // tokens, dim and the informational fields as first written
    if (auto s = read_sidecar(out)) sidecar = *s;
    const std::string header_hash = feature_hash_hex(feature_hash(header.to_json().data(), header.to_json().size()));
    if (!sidecar.header_hash.empty() && sidecar.header_hash != header_hash)
      throw std::runtime_error("'" + sidecar_path(out) + "' belongs to another extraction; delete it and '" + partial + "'");
    if (sidecar.rows_done < 0 || sidecar.rows_done > header.rows() ||
        static_cast<int64_t>(sidecar.checksums.size()) != (sidecar.rows_done + header.chunk_rows - 1) / header.chunk_rows)
      throw std::runtime_error("'" + sidecar_path(out) + "' is inconsistent; delete it and '" + partial + "'");
    sidecar.header_hash = header_hash;
    fd = std::make_unique<Fd>(partial, O_RDWR);
  } else {
    // tokens x dim come from the backbone's output for the first chunk.
    const int64_t n = std::min<int64_t>(header.chunk_rows, header.rows());
    first_half = to_half(backbone(load_batch(image_paths, 0, n, header.image_size)), n, out);
    if (first_half.dim() != 3) throw std::runtime_error("feature cache: the backbone output must be B x tokens x dim");
    header.tokens = first_half.size(1);
    header.dim = first_half.size(2);
    const std::string head = head_bytes(header, fixed);
    fd = std::make_unique<Fd>(partial, O_RDWR | O_CREAT | O_TRUNC);
    try {
      pwrite_all(fd->get(), head.data(), head.size(), 0, partial);
      if (::ftruncate(fd->get(), static_cast<off_t>(fixed.data_offset + fixed.data_bytes)) != 0)
        throw io_error("cannot size (disk full?)", partial);
      if (::fsync(fd->get()) != 0) throw io_error("fsync failed for", partial);
      fsync_folder(partial);
      const std::string text = header.to_json();
      sidecar = Sidecar{0, {}, feature_hash_hex(feature_hash(text.data(), text.size()))};
      write_sidecar(out, sidecar);
    } catch (...) {
      // Nothing to resume yet: no leftover for the user to delete by hand.
      fd.reset();
      std::error_code ignored;
      fs::remove(partial, ignored);
      fs::remove(sidecar_path(out), ignored);
      throw;
    }
  }

  const uint64_t row_bytes = static_cast<uint64_t>(header.tokens * header.dim) * 2;
  result.resumed_rows = sidecar.rows_done;
  if (options.progress) options.progress(sidecar.rows_done, header.rows());
  auto decode_async = [&](int64_t first) {
    const int64_t n = std::min(header.chunk_rows, header.rows() - first);
    return std::async(std::launch::async, [&image_paths, first, n, size = header.image_size] {
      return load_batch(image_paths, first, n, size);
    });
  };
  std::future<at::Tensor> next;
  int64_t first = sidecar.rows_done;
  if (first < header.rows() && !(first == 0 && first_half.defined())) next = decode_async(first);
  for (; first < header.rows(); first += header.chunk_rows) {
    const int64_t n = std::min(header.chunk_rows, header.rows() - first);
    torch::Tensor half;
    if (first == 0 && first_half.defined()) {
      half = first_half;
      if (n < header.rows()) next = decode_async(first + n);
    } else {
      const auto input = next.get();
      if (first + n < header.rows()) next = decode_async(first + n);
      half = to_half(backbone(input), n, out);
      if (half.size(1) != header.tokens || half.size(2) != header.dim)
        throw std::runtime_error("feature cache: the backbone's output shape changed between batches");
    }
    const size_t bytes = static_cast<size_t>(row_bytes * static_cast<uint64_t>(n));
    pwrite_all(fd->get(), half.data_ptr(), bytes, fixed.data_offset + static_cast<uint64_t>(first) * row_bytes, partial);
    if (::fdatasync(fd->get()) != 0) throw io_error("fdatasync failed for", partial);
    // Only rows that reached the disk are counted as done.
    sidecar.rows_done = first + n;
    sidecar.checksums.push_back(feature_hash_hex(feature_hash(half.data_ptr(), bytes)));
    write_sidecar(out, sidecar);
    result.computed_rows += n;
    if (options.progress) options.progress(sidecar.rows_done, header.rows());
  }

  // Trailer, then the rename that makes the file a finished cache.
  std::string trailer = json{{"chunk_checksums", sidecar.checksums}}.dump();
  const uint64_t trailer_bytes = trailer.size();
  put_u64(trailer, trailer_bytes);
  trailer.append(kEndMagic, 8);
  pwrite_all(fd->get(), trailer.data(), trailer.size(), fixed.data_offset + fixed.data_bytes, partial);
  if (::fsync(fd->get()) != 0) throw io_error("fsync failed for", partial);
  fd.reset();
  if (std::rename(partial.c_str(), out.c_str()) != 0) throw io_error("cannot rename into place", out);
  fsync_folder(out);
  std::error_code ignored;
  fs::remove(sidecar_path(out), ignored);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace expnet
