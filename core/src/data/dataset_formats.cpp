#include "data/dataset_formats.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <filesystem>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "expnet/text/caption_text.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace expnet {

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

std::string caption_too_long(size_t bytes) {
  return "a caption of " + std::to_string(bytes) + " bytes, more than the " + std::to_string(kMaxCaptionBytes) +
         " a caption may have; the file is damaged or not a caption dataset";
}

namespace {

Caption make_caption(std::string raw, const std::string& where) {
  if (raw.size() > kMaxCaptionBytes) throw std::runtime_error(where + ": " + caption_too_long(raw.size()));
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

}  // namespace

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
    if (sentences != entry.end() && !sentences->is_array())
      throw std::runtime_error(where + ".sentences is not a list; write \"sentences\": [{\"raw\": \"a caption\"}, ...] "
                               "(or [] for an image without captions)");
    if (sentences != entry.end()) {
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
        image.captions.push_back(make_caption(std::move(raw), where + ".sentences[" + std::to_string(s) + "]"));
      }
    }
    dataset.images.push_back(std::move(image));
  }
  return dataset;
}

// COCO captions_*.json ------------------------------------------------------

std::string coco_folder_name(const std::string& path) {
  std::string stem = fs::path(path).stem().string();
  const auto underscore = stem.find('_');
  return underscore == std::string::npos ? std::string() : stem.substr(underscore + 1);
}

namespace {

Split coco_split_from_name(const std::string& path) {
  const std::string name = lower_ascii(fs::path(path).filename().string());
  if (name.find("test") != std::string::npos) return Split::Test;
  if (name.find("val") != std::string::npos) return Split::Val;
  return Split::Train;
}

}  // namespace

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
    dataset.images[it->second].captions.push_back(make_caption(std::move(raw), where));
  }
  return dataset;
}

namespace {

// CSV and JSONL rows ----------------------------------------------------------

// Rows of (image, caption[, split][, id]) grouped by image, in order of first appearance.
class RowCollector {
 public:
  // Reserving one image per line up front keeps a vector of millions of images
  // from holding its old and new copies at once while it grows (3x at the peak).
  RowCollector(Dataset& dataset, const std::string& text) : dataset_(dataset) {
    const size_t lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
    dataset_.images.reserve(lines);
    by_path_.reserve(lines);
  }
  void finish() {
    by_path_ = {};
    if (dataset_.images.capacity() > 2 * dataset_.images.size() + 1024) dataset_.images.shrink_to_fit();
  }

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
    dataset_.images[it->second].captions.push_back(make_caption(std::move(caption), where));
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

}  // namespace

Dataset read_csv(const std::string& path, const std::string& text) {
  Dataset dataset;
  dataset.format = DatasetFormat::Csv;
  RowCollector collector(dataset, text);
  std::vector<std::string> header;
  int image_col = -1, caption_col = -1, split_col = -1, id_col = -1;
  for_each_csv_row(text, path, [&](CsvRow& row) {
    if (row.line == 1 && header.empty()) {
      header = std::move(row.fields);
      image_col = find_column(header, kImageColumns);
      caption_col = find_column(header, kCaptionColumns);
      split_col = find_column(header, kSplitColumns);
      id_col = find_column(header, kIdColumns);
      if (image_col < 0 || caption_col < 0)
        throw std::runtime_error(path + ":1: the header needs an 'image' and a 'caption' column (optional: 'split', 'id'); "
                                 "found '" + (header.empty() ? std::string() : header.front()) + "'...; add a header row like image,caption,split");
      return;
    }
    const std::string where = path + ":" + std::to_string(row.line);
    if (row.fields.size() == 1 && trim(row.fields[0]).empty()) return;  // blank line
    if (row.fields.size() != header.size())
      throw std::runtime_error(where + ": row has " + std::to_string(row.fields.size()) + " fields but the header has " +
                               std::to_string(header.size()) + "; quote fields that contain commas (\"a, b\")");
    collector.add(where, row.fields[image_col], std::move(row.fields[caption_col]), split_col >= 0 ? row.fields[split_col] : "",
                  id_col >= 0 ? row.fields[id_col] : "");
  });
  if (header.empty()) throw std::runtime_error(path + " is empty; it needs a header row: image,caption[,split]");
  collector.finish();
  return dataset;
}

namespace {

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

}  // namespace

Dataset read_jsonl(const std::string& path, const std::string& text) {
  Dataset dataset;
  dataset.format = DatasetFormat::Jsonl;
  RowCollector collector(dataset, text);
  std::istringstream in(text);
  std::string line;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (trim(line).empty()) continue;
    const std::string where = path + ":" + std::to_string(number);
    json row;
    try {
      // nlohmann would stop at a NUL byte and ignore the rest of the line.
      if (line.find('\0') != std::string::npos) throw std::invalid_argument("a NUL byte, which JSON never holds");
      row = json::parse(line);
    } catch (const std::exception& e) {  // parse errors, numbers beyond double's range ("1e400"), NUL
      throw std::runtime_error(where + ": not a JSON object we can read (" + std::string(e.what()) +
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
  collector.finish();
  return dataset;
}

}  // namespace expnet
