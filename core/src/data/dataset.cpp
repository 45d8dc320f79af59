// Loading a dataset (finding its file and format; the readers of each format are
// in dataset_formats.cpp), writing Karpathy JSON, CSV parsing, vocabulary
// building and statistics.
#include "expnet/data/dataset.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "data/dataset_formats.h"
#include "data/photo_folder.h"
#include "expnet/system/atomic_file.h"
#include "expnet/system/input_file.h"
#include "expnet/text/caption_text.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace expnet {
namespace {

std::string read_text_file(const std::string& path) { return read_input_file(path, "dataset file"); }

// 1-based line and column of a byte offset, for JSON error messages.
std::pair<size_t, size_t> line_column(const std::string& text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

json parse_json_file(const std::string& path, const std::string& text) {
  // nlohmann stops at a NUL byte and ignores what follows (JSON allows none):
  // a file padded with zeros after a crash must not load half-read.
  if (const auto nul = text.find('\0'); nul != std::string::npos) {
    const auto [line, column] = line_column(text, nul);
    throw std::runtime_error(path + ":" + std::to_string(line) + ":" + std::to_string(column) +
                             ": a NUL byte, which JSON never holds (a damaged or partly written copy?); "
                             "fix the file or re-export it");
  }
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    const auto [line, column] = line_column(text, e.byte == 0 ? 0 : e.byte - 1);
    throw std::runtime_error(path + ":" + std::to_string(line) + ":" + std::to_string(column) +
                             ": not valid JSON (" + e.what() + "); fix the file or re-export it");
  } catch (const json::out_of_range& e) {
    // A number beyond double's range ("1e400"): the parser gives no position, the message names the text.
    const std::string what = e.what();
    const auto open = what.find('\''), close = what.rfind('\'');
    std::string place = path;
    if (open != std::string::npos && close > open) {
      const auto at = text.find(what.substr(open + 1, close - open - 1));
      if (at != std::string::npos) {
        const auto [line, column] = line_column(text, at);
        place += ":" + std::to_string(line) + ":" + std::to_string(column);
      }
    }
    throw std::runtime_error(place + ": a number too large to read (" + what + "); write it as an integer or a "
                             "string, as the format expects");
  }
}

DatasetFormat format_from_extension(const fs::path& path) {
  const std::string ext = lower_ascii(path.extension().string());
  if (ext == ".csv") return DatasetFormat::Csv;
  if (ext == ".jsonl" || ext == ".ndjson") return DatasetFormat::Jsonl;
  return DatasetFormat::Auto;  // .json: decided by its content
}

}  // namespace

namespace {

// One table per enum: the name each value is written and read by.
template <typename Enum, size_t N>
using NameTable = std::pair<Enum, const char*>[N];
const NameTable<Split, 4> kSplitNames = {
    {Split::Train, "train"}, {Split::Restval, "restval"}, {Split::Val, "val"}, {Split::Test, "test"}};
const NameTable<DatasetFormat, 6> kFormatNames = {
    {DatasetFormat::Auto, "auto"}, {DatasetFormat::Karpathy, "karpathy"}, {DatasetFormat::Coco, "coco"},
    {DatasetFormat::Csv, "csv"},   {DatasetFormat::Jsonl, "jsonl"},       {DatasetFormat::Photos, "photos"}};

template <typename Enum, size_t N>
const char* name_in(const NameTable<Enum, N>& table, Enum value) {
  for (const auto& [each, name] : table)
    if (each == value) return name;
  return table[0].second;
}

// The value whose name is `text` (any case, surrounding spaces ignored), if any.
template <typename Enum, size_t N>
std::optional<Enum> value_in(const NameTable<Enum, N>& table, const std::string& text) {
  const std::string name = lower_ascii(trim(text));
  for (const auto& [value, each] : table)
    if (name == each) return value;
  return std::nullopt;
}

}  // namespace

const char* split_name(Split split) { return name_in(kSplitNames, split); }

Split parse_split(const std::string& text) {
  if (const auto split = value_in(kSplitNames, text)) return *split;
  const std::string name = lower_ascii(trim(text));
  if (name == "validation" || name == "valid" || name == "dev") return Split::Val;
  throw std::invalid_argument("unknown split '" + text + "' (use train, restval, val or test)");
}

const char* format_name(DatasetFormat format) { return name_in(kFormatNames, format); }

DatasetFormat parse_format(const std::string& text) {
  if (const auto format = value_in(kFormatNames, text)) return *format;
  throw std::invalid_argument("unknown dataset format '" + text + "' (use auto, karpathy, coco, csv, jsonl or photos)");
}

std::string Dataset::image_path(const DatasetImage& image) const {
  fs::path path(image_root);
  if (!image.filepath.empty()) path /= image.filepath;
  return (path / image.filename).string();
}

size_t Dataset::caption_count() const {
  size_t total = 0;
  for (const auto& image : images) total += image.captions.size();
  return total;
}

std::vector<size_t> images_of_split(const Dataset& dataset, const std::string& split) {
  const bool all = split == "all";
  Split wanted = Split::Test;
  try {
    if (!all) wanted = parse_split(split);
  } catch (const std::invalid_argument&) {
    throw std::runtime_error(dataset.source + ": unknown split '" + split + "' (use train, restval, val, test or all)");
  }
  std::vector<size_t> out;
  for (size_t i = 0; i < dataset.images.size(); ++i)
    if (all || dataset.images[i].split == wanted) out.push_back(i);
  if (out.empty())
    throw std::runtime_error(dataset.source + ": no images in split '" + split +
                             "' (splits: train, restval, val, test, or all)");
  return out;
}

size_t Dataset::image_count(Split split) const {
  return static_cast<size_t>(std::count_if(images.begin(), images.end(), [split](const DatasetImage& i) { return i.split == split; }));
}

std::pair<std::string, DatasetFormat> resolve_dataset(const std::string& path, DatasetFormat format) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw std::runtime_error("dataset '" + path + "' does not exist; give a dataset file or a folder holding dataset_coco.json");
  std::string file = path;
  const bool folder = fs::is_directory(path, ec);
  if (format == DatasetFormat::Photos && !folder)
    throw std::runtime_error("'" + path + "' is a file; --format photos takes a folder of photos");
  if (format == DatasetFormat::Photos) return {path, format};
  if (folder) {
    const fs::path karpathy = fs::path(path) / "dataset_coco.json";
    if (fs::exists(karpathy, ec)) {
      file = karpathy.string();
    } else {
      std::vector<fs::path> candidates;
      for (const auto& entry : fs::directory_iterator(path, ec)) {
        const std::string ext = lower_ascii(entry.path().extension().string());
        if (entry.is_regular_file() && (ext == ".json" || ext == ".csv" || ext == ".jsonl" || ext == ".ndjson"))
          candidates.push_back(entry.path());
      }
      // No dataset file: a folder of photos, their texts in their own metadata.
      if (candidates.empty()) return {path, DatasetFormat::Photos};
      if (candidates.size() != 1)
        throw std::runtime_error("folder '" + path + "' has no dataset_coco.json and " + std::to_string(candidates.size()) +
                                 " other .json/.csv/.jsonl files; name the dataset file itself");
      file = candidates.front().string();
    }
  }
  if (format == DatasetFormat::Auto) format = format_from_extension(file);
  return {file, format};
}

namespace {

// Every reader keys images by id (the index, the evaluation, the trainer's samples): one image per id.
Dataset unique_ids(Dataset dataset) {
  const std::string& file = dataset.source;
  std::unordered_map<int64_t, size_t> first;
  for (size_t k = 0; k < dataset.images.size(); ++k) {
    const auto [it, fresh] = first.emplace(dataset.images[k].cocoid, k);
    if (!fresh)
      throw std::runtime_error(file + ": image id " + std::to_string(dataset.images[k].cocoid) + " (" +
                               dataset.images[k].filename + ") appears twice (images " + std::to_string(it->second) +
                               " and " + std::to_string(k) + "); every image needs its own cocoid/id");
  }
  return dataset;
}

}  // namespace

Dataset load_dataset(const std::string& path, const DatasetLoadOptions& options) {
  auto [file, format] = resolve_dataset(path, options.format);
  Dataset dataset;
  if (format == DatasetFormat::Photos) return unique_ids(read_photo_folder(file));
  const std::string text = read_text_file(file);
  if (format == DatasetFormat::Csv) {
    dataset = read_csv(file, text);
  } else if (format == DatasetFormat::Jsonl) {
    dataset = read_jsonl(file, text);
  } else {
    const json doc = parse_json_file(file, text);
    const bool has_images = doc.is_object() && doc.contains("images") && doc["images"].is_array();
    if (format == DatasetFormat::Auto) {
      if (!has_images)
        throw std::runtime_error(file + ": JSON without an \"images\" array: neither Karpathy's dataset_coco.json nor a COCO captions file; "
                                 "use --format csv or jsonl for row files");
      format = doc.contains("annotations") ? DatasetFormat::Coco : DatasetFormat::Karpathy;
    }
    if (!has_images) throw std::runtime_error(file + ": no \"images\" array, so not a " + std::string(format_name(format)) + " file");
    dataset = format == DatasetFormat::Coco ? read_coco(file, doc) : read_karpathy(file, doc);
  }
  dataset.source = file;
  dataset.format = format;
  if (!options.image_root.empty()) {
    dataset.image_root = options.image_root;
  } else {
    dataset.image_root = fs::path(file).parent_path().string();
    if (dataset.image_root.empty()) dataset.image_root = ".";
    if (format == DatasetFormat::Coco) {
      // COCO's layout: annotations/captions_val2014.json beside val2014/.
      fs::path root = dataset.image_root;
      if (root.filename() == "annotations") root = root.parent_path();
      const std::string folder = coco_folder_name(file);
      std::error_code ec;
      if (!folder.empty() && fs::is_directory(root / folder, ec)) {
        dataset.image_root = root.string();
        for (auto& image : dataset.images)
          if (image.filepath.empty()) image.filepath = folder;
      }
    }
  }
  return unique_ids(std::move(dataset));
}

std::string karpathy_json(const Dataset& dataset) {
  json images = json::array();
  for (const auto& image : dataset.images) {
    json sentences = json::array();
    for (const auto& caption : image.captions) sentences.push_back({{"raw", caption.raw}, {"tokens", caption.tokens}});
    json entry = {{"cocoid", image.cocoid}, {"filepath", image.filepath}, {"filename", image.filename},
                  {"split", split_name(image.split)}, {"sentences", std::move(sentences)}};
    if (image.width > 0) entry["width"] = image.width;
    if (image.height > 0) entry["height"] = image.height;
    images.push_back(std::move(entry));
  }
  return json({{"dataset", "coco"}, {"images", std::move(images)}}).dump();
}

std::vector<CsvRow> parse_csv(const std::string& text, const std::string& source) {
  std::vector<CsvRow> rows;
  for_each_csv_row(text, source, [&](CsvRow& row) { rows.push_back(std::move(row)); });
  return rows;
}

void for_each_csv_row(const std::string& text, const std::string& source, const std::function<void(CsvRow&)>& take) {
  size_t i = 0;
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) i = 3;
  size_t line = 1;
  CsvRow row{line, {}};
  std::string field;
  bool field_started = false;  // something (even "") was read for this row
  while (i < text.size()) {
    const char c = text[i];
    if (c == '"' && field.empty()) {
      // Quoted field: runs to the closing quote; "" is a literal quote.
      const size_t opened_line = line;
      ++i;
      bool closed = false;
      while (i < text.size()) {
        if (text[i] == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          closed = true;
          break;
        }
        if (text[i] == '\n') ++line;
        field += text[i++];
      }
      if (!closed)
        throw std::runtime_error(source + ":" + std::to_string(opened_line) +
                                 ": a quoted field is never closed; close it with \" (write \"\" for a quote inside a field)");
      field_started = true;
      // Text after a closing quote up to the separator is kept (lenient, like Python's csv).
      continue;
    }
    if (c == ',') {
      row.fields.push_back(std::move(field));
      field.clear();
      field_started = true;
      ++i;
      continue;
    }
    if (c == '\r' || c == '\n') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      ++i;
      row.fields.push_back(std::move(field));
      field.clear();
      take(row);
      ++line;
      row = CsvRow{line, {}};
      field_started = false;
      continue;
    }
    field += c;
    field_started = true;
    ++i;
  }
  if (field_started || !field.empty()) {
    row.fields.push_back(std::move(field));
    take(row);
  }
}

VocabularyBuild build_vocabulary(const Dataset& dataset, int min_count) {
  if (min_count < 1) throw std::invalid_argument("--min-count must be at least 1");
  VocabularyBuild build;
  for (const auto& image : dataset.images) {
    if (!is_training_split(image.split)) continue;
    for (const auto& caption : image.captions)
      for (const auto& token : caption.tokens) ++build.counts[token];
  }
  std::vector<std::string> words = {"PAD", "SOS", "EOS", "UNK"};
  for (const auto& [word, count] : build.counts) {
    build.total_tokens += count;
    if (count >= min_count) {
      ++build.kept_words;
      // A corpus word spelled like a special token is that token already.
      if (std::find(words.begin(), words.begin() + 4, word) == words.begin() + 4) words.push_back(word);
    } else {
      ++build.dropped_words;
      build.unk_tokens += count;
    }
  }
  std::sort(words.begin(), words.end());  // byte order of UTF-8 = code point order, as Python's sorted()
  build.vocabulary = Vocabulary(std::move(words));
  return build;
}

DatasetStats compute_stats(const Dataset& dataset, int min_count, size_t top_words) {
  DatasetStats stats;
  const VocabularyBuild build = build_vocabulary(dataset, min_count);
  stats.images = dataset.images.size();
  size_t length_sum = 0;
  int64_t eval_tokens = 0, eval_known = 0;
  for (const auto& image : dataset.images) {
    const std::string split = split_name(image.split);
    ++stats.images_per_split[split];
    stats.captions_per_split[split] += image.captions.size();
    if (image.captions.empty()) ++stats.images_without_captions;
    for (const auto& caption : image.captions) {
      const size_t length = caption.tokens.size();
      ++stats.caption_length_histogram[length];
      length_sum += length;
      stats.max_caption_length = std::max(stats.max_caption_length, length);
      ++stats.captions;
      if (!is_training_split(image.split)) {
        for (const auto& token : caption.tokens) {
          ++eval_tokens;
          if (build.vocabulary.id(token) >= 0) ++eval_known;
        }
      }
    }
  }
  stats.mean_caption_length = stats.captions ? static_cast<double>(length_sum) / static_cast<double>(stats.captions) : 0.0;
  std::vector<std::pair<std::string, int64_t>> words(build.counts.begin(), build.counts.end());
  const size_t keep = std::min(top_words, words.size());
  std::partial_sort(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(keep), words.end(),
                    [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  words.resize(keep);
  stats.top_words = std::move(words);
  stats.distinct_training_words = static_cast<int64_t>(build.counts.size());
  stats.vocabulary_size = build.vocabulary.size();
  const auto kept = [&build](int m) {
    return std::count_if(build.counts.begin(), build.counts.end(), [m](const auto& entry) { return entry.second >= m; });
  };
  const int64_t specials = stats.vocabulary_size - kept(min_count);
  for (int m = 1; m <= 20; ++m) stats.vocabulary_size_by_min_count[m] = kept(m) + specials;
  stats.training_coverage = build.total_tokens ? 1.0 - static_cast<double>(build.unk_tokens) / static_cast<double>(build.total_tokens) : 0.0;
  stats.eval_coverage = eval_tokens ? static_cast<double>(eval_known) / static_cast<double>(eval_tokens) : 0.0;
  return stats;
}

}  // namespace expnet
