// Dataset readers (Karpathy, COCO captions, CSV, JSONL), format detection,
// vocabulary building and statistics.
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

#include "expnet/system/atomic_file.h"
#include "expnet/text/caption_text.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace expnet {
namespace {

std::string lower_ascii(std::string text) {
  for (auto& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

std::string read_text_file(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw std::runtime_error("dataset '" + path + "' is a folder, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open dataset file '" + path + "': check the path and its permissions");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw std::runtime_error("cannot read dataset file '" + path + "' (I/O error)");
  return buffer.str();
}

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
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    const auto [line, column] = line_column(text, e.byte == 0 ? 0 : e.byte - 1);
    throw std::runtime_error(path + ":" + std::to_string(line) + ":" + std::to_string(column) +
                             ": not valid JSON (" + e.what() + "); fix the file or re-export it");
  }
}

Caption make_caption(std::string raw) {
  Caption caption;
  caption.tokens = clean_caption(raw);
  caption.raw = std::move(raw);
  return caption;
}

void split_image_path(const std::string& relative, DatasetImage& image) {
  const fs::path path(relative);
  image.filename = path.filename().string();
  image.filepath = path.parent_path().generic_string();
}

Split parse_split_at(const std::string& text, const std::string& where) {
  try {
    return parse_split(text);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(where + ": " + e.what());
  }
}

// Karpathy ---------------------------------------------------------------

std::string json_string(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

Dataset read_karpathy(const std::string& path, const json& doc) {
  Dataset dataset;
  dataset.format = DatasetFormat::Karpathy;
  const json& images = doc.at("images");
  dataset.images.reserve(images.size());
  for (size_t i = 0; i < images.size(); ++i) {
    const json& entry = images[i];
    const std::string where = path + ": images[" + std::to_string(i) + "]";
    if (!entry.is_object()) throw std::runtime_error(where + " is not an object; each image is {\"filename\", \"split\", \"sentences\", ...}");
    DatasetImage image;
    image.filename = json_string(entry, "filename");
    if (image.filename.empty())
      throw std::runtime_error(where + " has no \"filename\" string; every image needs its file name");
    image.filepath = json_string(entry, "filepath");
    if (entry.contains("cocoid") && entry["cocoid"].is_number_integer()) {
      image.cocoid = entry["cocoid"].get<int64_t>();
    } else if (entry.contains("imgid") && entry["imgid"].is_number_integer()) {
      image.cocoid = entry["imgid"].get<int64_t>();
    } else {
      image.cocoid = static_cast<int64_t>(i);
    }
    const std::string split = json_string(entry, "split");
    if (split.empty()) throw std::runtime_error(where + " (\"" + image.filename + "\") has no \"split\"; use train, restval, val or test");
    image.split = parse_split_at(split, where);
    if (entry.contains("width") && entry["width"].is_number_integer()) image.width = entry["width"].get<int>();
    if (entry.contains("height") && entry["height"].is_number_integer()) image.height = entry["height"].get<int>();
    const auto sentences = entry.find("sentences");
    if (sentences != entry.end() && sentences->is_array()) {
      image.captions.reserve(sentences->size());
      for (size_t s = 0; s < sentences->size(); ++s) {
        const json& sentence = (*sentences)[s];
        std::string raw = sentence.is_object() ? json_string(sentence, "raw") : std::string();
        if (raw.empty() && sentence.is_object() && sentence.contains("tokens") && sentence["tokens"].is_array()) {
          for (const auto& token : sentence["tokens"])
            if (token.is_string()) raw += (raw.empty() ? "" : " ") + token.get<std::string>();
        }
        if (raw.empty())
          throw std::runtime_error(where + ".sentences[" + std::to_string(s) +
                                   "] has neither \"raw\" text nor \"tokens\"; remove it or add the caption");
        image.captions.push_back(make_caption(std::move(raw)));
      }
    }
    dataset.images.push_back(std::move(image));
  }
  return dataset;
}

// COCO captions_*.json ------------------------------------------------------

// captions_val2014.json -> "val2014": the usual image folder name.
std::string coco_folder_name(const std::string& path) {
  std::string stem = fs::path(path).stem().string();
  const auto underscore = stem.find('_');
  return underscore == std::string::npos ? std::string() : stem.substr(underscore + 1);
}

Split coco_split_from_name(const std::string& path) {
  const std::string name = lower_ascii(fs::path(path).filename().string());
  if (name.find("test") != std::string::npos) return Split::Test;
  if (name.find("val") != std::string::npos) return Split::Val;
  return Split::Train;
}

Dataset read_coco(const std::string& path, const json& doc) {
  Dataset dataset;
  dataset.format = DatasetFormat::Coco;
  const Split split = coco_split_from_name(path);
  std::unordered_map<int64_t, size_t> by_id;
  const json& images = doc.at("images");
  for (size_t i = 0; i < images.size(); ++i) {
    const json& entry = images[i];
    const std::string where = path + ": images[" + std::to_string(i) + "]";
    if (!entry.is_object() || !entry.contains("id") || !entry["id"].is_number_integer())
      throw std::runtime_error(where + " has no integer \"id\"; COCO images are {\"id\", \"file_name\", ...}");
    DatasetImage image;
    image.cocoid = entry["id"].get<int64_t>();
    split_image_path(json_string(entry, "file_name"), image);
    if (image.filename.empty()) throw std::runtime_error(where + " has no \"file_name\"");
    image.split = split;
    if (entry.contains("width") && entry["width"].is_number_integer()) image.width = entry["width"].get<int>();
    if (entry.contains("height") && entry["height"].is_number_integer()) image.height = entry["height"].get<int>();
    if (!by_id.emplace(image.cocoid, dataset.images.size()).second)
      throw std::runtime_error(where + ": image id " + std::to_string(image.cocoid) + " appears twice");
    dataset.images.push_back(std::move(image));
  }
  const auto annotations = doc.find("annotations");
  if (annotations == doc.end() || !annotations->is_array())
    throw std::runtime_error(path + ": no \"annotations\" array; is this a COCO captions_*.json file?");
  for (size_t i = 0; i < annotations->size(); ++i) {
    const json& entry = (*annotations)[i];
    const std::string where = path + ": annotations[" + std::to_string(i) + "]";
    if (!entry.is_object() || !entry.contains("image_id") || !entry["image_id"].is_number_integer())
      throw std::runtime_error(where + " has no integer \"image_id\"");
    const auto it = by_id.find(entry["image_id"].get<int64_t>());
    if (it == by_id.end())
      throw std::runtime_error(where + " refers to image_id " + std::to_string(entry["image_id"].get<int64_t>()) +
                               ", which is not in \"images\"");
    std::string raw = json_string(entry, "caption");
    if (raw.empty()) throw std::runtime_error(where + " has no \"caption\" text");
    dataset.images[it->second].captions.push_back(make_caption(std::move(raw)));
  }
  return dataset;
}

// CSV and JSONL rows ----------------------------------------------------------

// Rows of (image, caption[, split][, id]) grouped by image, in order of first appearance.
class RowCollector {
 public:
  explicit RowCollector(Dataset& dataset) : dataset_(dataset) {}

  void add(const std::string& where, const std::string& image_path, std::string caption, const std::string& split,
           const std::string& id) {
    if (trim(image_path).empty()) throw std::runtime_error(where + ": the image column is empty; give the image's path relative to the dataset folder");
    if (trim(caption).empty()) throw std::runtime_error(where + ": the caption of '" + image_path + "' is empty; remove the row or write the caption");
    const Split row_split = trim(split).empty() ? Split::Train : parse_split_at(trim(split), where);
    auto [it, inserted] = by_path_.emplace(image_path, dataset_.images.size());
    if (inserted) {
      DatasetImage image;
      split_image_path(image_path, image);
      image.split = row_split;
      image.cocoid = static_cast<int64_t>(dataset_.images.size()) + 1;
      if (!trim(id).empty()) {
        try {
          size_t used = 0;
          image.cocoid = std::stoll(trim(id), &used);
          if (used != trim(id).size()) throw std::invalid_argument(id);
        } catch (const std::exception&) {
          throw std::runtime_error(where + ": id '" + id + "' is not an integer");
        }
      }
      dataset_.images.push_back(std::move(image));
    } else if (dataset_.images[it->second].split != row_split && !trim(split).empty()) {
      throw std::runtime_error(where + ": image '" + image_path + "' is in split '" + trim(split) + "' here but '" +
                               split_name(dataset_.images[it->second].split) +
                               "' on an earlier row; an image belongs to one split");
    }
    dataset_.images[it->second].captions.push_back(make_caption(std::move(caption)));
  }

 private:
  Dataset& dataset_;
  std::unordered_map<std::string, size_t> by_path_;
};

int find_column(const std::vector<std::string>& header, std::initializer_list<const char*> names) {
  for (size_t i = 0; i < header.size(); ++i)
    for (const char* name : names)
      if (lower_ascii(trim(header[i])) == name) return static_cast<int>(i);
  return -1;
}

constexpr std::initializer_list<const char*> kImageColumns = {"image", "file", "filename", "file_name", "path", "image_path"};
constexpr std::initializer_list<const char*> kCaptionColumns = {"caption", "text", "sentence", "raw"};
constexpr std::initializer_list<const char*> kSplitColumns = {"split"};
constexpr std::initializer_list<const char*> kIdColumns = {"id", "cocoid", "image_id"};

Dataset read_csv(const std::string& path, const std::string& text) {
  Dataset dataset;
  dataset.format = DatasetFormat::Csv;
  const auto rows = parse_csv(text, path);
  if (rows.empty()) throw std::runtime_error(path + " is empty; it needs a header row: image,caption[,split]");
  const auto& header = rows.front().fields;
  const int image_col = find_column(header, kImageColumns);
  const int caption_col = find_column(header, kCaptionColumns);
  const int split_col = find_column(header, kSplitColumns);
  const int id_col = find_column(header, kIdColumns);
  if (image_col < 0 || caption_col < 0)
    throw std::runtime_error(path + ":1: the header needs an 'image' and a 'caption' column (optional: 'split', 'id'); "
                             "found '" + (header.empty() ? std::string() : header.front()) + "'...; add a header row like image,caption,split");
  RowCollector collector(dataset);
  for (size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    const std::string where = path + ":" + std::to_string(row.line);
    if (row.fields.size() == 1 && trim(row.fields[0]).empty()) continue;  // blank line
    if (row.fields.size() != header.size())
      throw std::runtime_error(where + ": row has " + std::to_string(row.fields.size()) + " fields but the header has " +
                               std::to_string(header.size()) + "; quote fields that contain commas (\"a, b\")");
    collector.add(where, row.fields[image_col], row.fields[caption_col], split_col >= 0 ? row.fields[split_col] : "",
                  id_col >= 0 ? row.fields[id_col] : "");
  }
  return dataset;
}

const json* find_member(const json& object, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const auto it = object.find(name);
    if (it != object.end()) return &*it;
  }
  return nullptr;
}

std::string scalar_text(const json* value) {
  if (!value || value->is_null()) return {};
  if (value->is_string()) return value->get<std::string>();
  return value->dump();
}

Dataset read_jsonl(const std::string& path, const std::string& text) {
  Dataset dataset;
  dataset.format = DatasetFormat::Jsonl;
  RowCollector collector(dataset);
  std::istringstream in(text);
  std::string line;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (trim(line).empty()) continue;
    const std::string where = path + ":" + std::to_string(number);
    json row;
    try {
      row = json::parse(line);
    } catch (const json::parse_error& e) {
      throw std::runtime_error(where + ": not a JSON object (" + std::string(e.what()) +
                               "); each line must be {\"image\": ..., \"caption\": ...}");
    }
    if (!row.is_object()) throw std::runtime_error(where + ": each line must be a JSON object {\"image\": ..., \"caption\": ...}");
    const json* image = find_member(row, kImageColumns);
    if (!image || !image->is_string()) throw std::runtime_error(where + ": no \"image\" string (the image path relative to the dataset folder)");
    const std::string split = scalar_text(find_member(row, kSplitColumns));
    const std::string id = scalar_text(find_member(row, kIdColumns));
    const json* captions = find_member(row, {"captions", "sentences"});
    const json* caption = find_member(row, kCaptionColumns);
    if (captions && captions->is_array()) {
      for (const auto& c : *captions) {
        if (!c.is_string()) throw std::runtime_error(where + ": \"captions\" must be an array of strings");
        collector.add(where, image->get<std::string>(), c.get<std::string>(), split, id);
      }
    } else if (caption && caption->is_string()) {
      collector.add(where, image->get<std::string>(), caption->get<std::string>(), split, id);
    } else {
      throw std::runtime_error(where + ": no \"caption\" string (or \"captions\" array of strings)");
    }
  }
  return dataset;
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
const NameTable<DatasetFormat, 5> kFormatNames = {{DatasetFormat::Auto, "auto"},
                                                  {DatasetFormat::Karpathy, "karpathy"},
                                                  {DatasetFormat::Coco, "coco"},
                                                  {DatasetFormat::Csv, "csv"},
                                                  {DatasetFormat::Jsonl, "jsonl"}};

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
  throw std::invalid_argument("unknown dataset format '" + text + "' (use auto, karpathy, coco, csv or jsonl)");
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

size_t Dataset::image_count(Split split) const {
  return static_cast<size_t>(std::count_if(images.begin(), images.end(), [split](const DatasetImage& i) { return i.split == split; }));
}

std::pair<std::string, DatasetFormat> resolve_dataset(const std::string& path, DatasetFormat format) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw std::runtime_error("dataset '" + path + "' does not exist; give a dataset file or a folder holding dataset_coco.json");
  std::string file = path;
  if (fs::is_directory(path, ec)) {
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
      if (candidates.size() != 1)
        throw std::runtime_error("folder '" + path + "' has no dataset_coco.json and " + std::to_string(candidates.size()) +
                                 " other .json/.csv/.jsonl files; name the dataset file itself");
      file = candidates.front().string();
    }
  }
  if (format == DatasetFormat::Auto) format = format_from_extension(file);
  return {file, format};
}

Dataset load_dataset(const std::string& path, const DatasetLoadOptions& options) {
  auto [file, format] = resolve_dataset(path, options.format);
  const std::string text = read_text_file(file);
  Dataset dataset;
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
  return dataset;
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
      rows.push_back(std::move(row));
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
    rows.push_back(std::move(row));
  }
  return rows;
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
  stats.training_coverage = build.total_tokens ? 1.0 - static_cast<double>(build.unk_tokens) / static_cast<double>(build.total_tokens) : 0.0;
  stats.eval_coverage = eval_tokens ? static_cast<double>(eval_known) / static_cast<double>(eval_tokens) : 0.0;
  return stats;
}

}  // namespace expnet
