// Backbone feature cache on disk: each image's Swin features computed once
// (batched) and stored as float16 in one memory-mapped file with a header that
// says which model config, which backbone weights and which images produced
// it. Frozen-backbone training stages read their features from it instead of
// running the backbone. File format: docs/datasets.md ("Feature cache").
//
// Writing goes to FILE.partial, preallocated, one chunk of rows at a time; the
// count of finished rows (and their checksums) is committed to
// FILE.partial.json after each chunk reached the disk, so an interrupted
// extraction resumes where it stopped. The trailer (chunk checksums + end
// magic) is appended last and only then is FILE.partial renamed to FILE: a
// file named FILE is complete, and a cut one is refused, never silently used.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace torch::nn {
class Module;
}

namespace expnet {

struct ModelConfig;

struct FeatureCacheHeader {
  std::string model_config_hash;  // feature_config_hash: the backbone's configuration
  std::string backbone;           // backbone_identity(): the backbone's weights
  std::string source;             // informational: checkpoint path, or run folder + stage
  std::string dataset;            // informational: dataset file
  std::string splits;             // informational: e.g. "train+restval"
  int64_t image_size = 0;         // model input size (the preprocessing)
  int64_t tokens = 0, dim = 0;    // per image: tokens x dim (filled from the backbone's output)
  int64_t chunk_rows = 32;        // images per backbone batch and per committed chunk
  std::vector<int64_t> ids;       // cocoid of each row, in row order

  int64_t rows() const { return static_cast<int64_t>(ids.size()); }
  std::string to_json() const;
  static FeatureCacheHeader from_json(const std::string& text, const std::string& source);
  // Empty when `other` was made by the same model config, backbone weights,
  // preprocessing, images and chunking; otherwise the first difference, in words.
  std::string identity_difference(const FeatureCacheHeader& other) const;
};

// 64-bit FNV-1a over little-endian 64-bit words (tail bytes one by one), hex.
// Not cryptographic: it tells caches apart and catches corruption.
uint64_t feature_hash(const void* data, size_t size, uint64_t seed = 0xcbf29ce484222325ULL);
std::string feature_hash_hex(uint64_t hash);
// A header's model_config_hash: of ModelConfig::backbone_json(), as the features
// depend on the backbone alone; captioners of any layers share a cache.
std::string feature_config_hash(const ModelConfig& config);
// Hash of a module's parameters and buffers (names, shapes, dtypes, bytes): the
// backbone's identity. Equal weights give equal identities on any machine.
std::string backbone_identity(const torch::nn::Module& backbone);

// A finished cache file, memory-mapped read-only; rows are read on demand.
class FeatureCacheReader {
 public:
  // Throws std::runtime_error naming the file for: not a cache, another
  // version, an unfinished extraction (FILE.partial), a truncated or
  // damaged file (size or trailer wrong).
  explicit FeatureCacheReader(const std::string& path);
  ~FeatureCacheReader();

  const std::string& path() const;
  const FeatureCacheHeader& header() const;
  int64_t file_bytes() const;
  // Row of an image id, -1 when the cache does not hold it.
  int64_t row_of(int64_t id) const;
  // rows -> B x tokens x dim float32 CPU tensor (converted from float16).
  at::Tensor features(const std::vector<int64_t>& rows) const;
  // Throws (naming the file and what differs) unless `expected` has the same
  // identity (FeatureCacheHeader::identity_difference).
  void require_identity(const FeatureCacheHeader& expected) const;
  // Recomputes every chunk checksum (reads the whole file); throws naming the
  // first damaged chunk.
  void verify() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct FeatureExtractOptions {
  std::string out;       // the cache file (FILE.partial and FILE.partial.json beside it while writing)
  bool resume = false;   // continue FILE.partial; without it an existing FILE.partial is an error
  // Called after each committed chunk: rows done (resumed ones included), total.
  std::function<void(int64_t done, int64_t total)> progress;
};

struct FeatureExtractResult {
  int64_t rows = 0, resumed_rows = 0, computed_rows = 0;
  double seconds = 0;
  bool already_complete = false;  // --resume on a finished file: nothing to do
};

// Computes the features of `image_paths` (row i = header.ids[i]) with
// `backbone` (B x 3 x S x S float32 -> B x tokens x dim), `header.chunk_rows`
// images per call, images decoded with load_image_rgb (one batch decoded
// ahead) and preprocessed for header.image_size. Throws std::runtime_error
// for image errors (naming the file), I/O errors and an identity mismatch
// with the FILE.partial being resumed.
FeatureExtractResult extract_feature_cache(FeatureCacheHeader header, const std::vector<std::string>& image_paths,
                                           const std::function<at::Tensor(const at::Tensor&)>& backbone,
                                           const FeatureExtractOptions& options);

// What a partial extraction has done so far (for `expnet features info`):
// rows committed, or -1 when there is no FILE.partial.json.
int64_t feature_cache_partial_rows(const std::string& out);

}  // namespace expnet
