// Captioning datasets in memory: images with their split and captions, read
// from Karpathy's dataset_coco.json, COCO captions_*.json, a CSV / JSONL of
// (image, caption[, split]) rows, or a folder of photos whose own metadata
// holds their alt text and descriptions. Captions are tokenised by clean_caption (the
// spec's "Captions" rules), never by a file's own "tokens" field, so every
// format trains the same way. See docs/datasets.md.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "expnet/text/vocabulary.h"

namespace expnet {

enum class Split { Train, Restval, Val, Test };
const char* split_name(Split split);
// "train", "restval", "val", "test" (case-insensitive; "validation" = val).
// Throws std::invalid_argument naming the value and the accepted ones.
Split parse_split(const std::string& text);
// The paper's training set is train + restval.
inline bool is_training_split(Split split) { return split == Split::Train || split == Split::Restval; }

struct Caption {
  std::string raw;
  std::vector<std::string> tokens;  // clean_caption(raw)
};

struct DatasetImage {
  int64_t cocoid = 0;
  std::string filepath;  // folder under the image root ("" = the root itself)
  std::string filename;
  Split split = Split::Train;
  int width = 0, height = 0;  // 0 = unknown
  std::vector<Caption> captions;
};

enum class DatasetFormat { Auto, Karpathy, Coco, Csv, Jsonl, Photos };
const char* format_name(DatasetFormat format);
DatasetFormat parse_format(const std::string& text);  // throws std::invalid_argument

struct Dataset {
  std::string source;      // the file read
  std::string image_root;  // images resolve as image_root/filepath/filename
  DatasetFormat format = DatasetFormat::Karpathy;
  std::vector<DatasetImage> images;
  // Photos: the files whose metadata could not be read ("path: why"); they are kept without captions.
  std::vector<std::string> unreadable;

  std::string image_path(const DatasetImage& image) const;
  size_t caption_count() const;
  size_t image_count(Split split) const;
};

// Decodes (and may preprocess) one image file to an RGB cv::Mat; throws
// std::runtime_error naming the file when it cannot. The app passes the images
// module's load_image_rgb: the data code never decodes images itself.
using ImageSource = std::function<cv::Mat(const std::string& path)>;

struct DatasetLoadOptions {
  DatasetFormat format = DatasetFormat::Auto;
  std::string image_root;  // empty: the dataset file's folder
};

// PATH: a dataset file, or a folder holding dataset_coco.json (or exactly one
// captions*.json / *.csv / *.jsonl), or else a folder of photos (format photos:
// the texts in their XMP or its sidecars are the references, docs/datasets.md). Throws std::runtime_error naming the
// file, the line or row, the reason and what to do.
Dataset load_dataset(const std::string& path, const DatasetLoadOptions& options = {});
// Indices into dataset.images of the images of `split` ("all": every image), in
// file order. Throws std::runtime_error naming the dataset for an unknown split
// name or a split without images.
std::vector<size_t> images_of_split(const Dataset& dataset, const std::string& split);

// Which file load_dataset reads for PATH and in which format (no parsing of the whole file).
std::pair<std::string, DatasetFormat> resolve_dataset(const std::string& path, DatasetFormat format);

// Writes a dataset as Karpathy JSON (atomically): the format make-shapes and the
// benchmarks produce. Extra per-image JSON (e.g. scene metadata) is not kept.
std::string karpathy_json(const Dataset& dataset);

// RFC 4180 CSV: quoted fields may hold commas, doubled quotes and line breaks;
// CRLF or LF line ends; a UTF-8 BOM is skipped. Each row remembers the line it
// started on for error messages. Throws std::runtime_error on an unterminated quote.
struct CsvRow {
  size_t line = 0;
  std::vector<std::string> fields;
};
std::vector<CsvRow> parse_csv(const std::string& text, const std::string& source = "CSV");
// The same rows one at a time, never all at once: a file of millions of short
// rows would otherwise hold each row twice (docs/reliability.md, "Limits").
void for_each_csv_row(const std::string& text, const std::string& source, const std::function<void(CsvRow&)>& take);

// Vocabulary ---------------------------------------------------------------

struct VocabularyBuild {
  Vocabulary vocabulary;
  std::map<std::string, int64_t> counts;  // every word of train + restval
  int64_t kept_words = 0, dropped_words = 0;    // distinct words kept / mapped to UNK
  int64_t total_tokens = 0, unk_tokens = 0;     // training tokens, and those that become UNK
};
// Words seen at least min_count times in train + restval captions, plus PAD,
// SOS, EOS, UNK; sorted by code point like the reference's released vocabulary
// (its EOS/PAD/SOS/UNK ids fall between digits and lower-case words).
VocabularyBuild build_vocabulary(const Dataset& dataset, int min_count = 5);

// Statistics ---------------------------------------------------------------

struct DatasetStats {
  std::map<std::string, size_t> images_per_split, captions_per_split;
  size_t images = 0, captions = 0, images_without_captions = 0;
  std::map<size_t, size_t> caption_length_histogram;  // tokens -> captions
  double mean_caption_length = 0;
  size_t max_caption_length = 0;
  std::vector<std::pair<std::string, int64_t>> top_words;  // training counts, most frequent first
  int64_t distinct_training_words = 0, vocabulary_size = 0;
  // Vocabulary size (PAD, SOS, EOS, UNK included) at each min count 1..20 (the studio's min-count field).
  std::map<int, int64_t> vocabulary_size_by_min_count;
  double training_coverage = 0;  // fraction of train+restval tokens in the vocabulary
  double eval_coverage = 0;      // same for val + test tokens
};
DatasetStats compute_stats(const Dataset& dataset, int min_count = 5, size_t top_words = 20);

}  // namespace expnet
