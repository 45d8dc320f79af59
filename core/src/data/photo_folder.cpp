#include "data/photo_folder.h"

#include <sys/stat.h>

#include <filesystem>
#include <stdexcept>

#include "data/dataset_formats.h"
#include "expnet/image/image_inputs.h"
#include "expnet/metadata/alt_text.h"
#include "expnet/text/caption_text.h"

namespace fs = std::filesystem;

namespace expnet {

namespace {

std::vector<std::string> images_under(const std::string& folder) {
  std::vector<std::string> paths;
  for (const auto& input : expand_image_inputs({folder})) {
    if (!input.error.empty()) {
      const size_t cut = input.error.find("no images");  // "folder holds no images (looked for ...)"
      throw std::runtime_error("folder '" + folder +
                               "' has no dataset file (dataset_coco.json, or one .json, .csv or .jsonl) and " +
                               (cut == std::string::npos ? input.error : input.error.substr(cut)) +
                               ": give a dataset file, or a folder of photos (their alt text is the references)");
    }
    paths.push_back(input.path);
  }
  return paths;
}

// A person's texts: the alt text and the description, without the model's unedited caption.
std::vector<std::string> references_of(const AltTextRecord& record) {
  std::vector<std::string> texts;
  for (const std::string* text : {&record.alt_text, &record.description}) {
    const std::string clean = trim(*text);
    if (clean.empty() || clean == trim(record.ours)) continue;
    if (texts.empty() || texts.front() != clean) texts.push_back(clean);
  }
  return texts;
}

// FNV-1a of the path, kept to 48 bits: exact as a JSON number in any reader (JavaScript's
// doubles included), the same on every machine and run.
int64_t id_of(const std::string& relative) {
  uint64_t hash = 14695981039346656037ull;
  for (const unsigned char c : relative) hash = (hash ^ c) * 1099511628211ull;
  return static_cast<int64_t>(hash >> 16);
}

}  // namespace

Dataset read_photo_folder(const std::string& folder) {
  Dataset dataset;
  dataset.source = folder;
  dataset.image_root = folder;
  dataset.format = DatasetFormat::Photos;
  for (const std::string& path : images_under(folder)) {
    DatasetImage image;
    const fs::path relative = fs::path(path).lexically_relative(folder);
    image.filepath = relative.parent_path().string();
    image.filename = relative.filename().string();
    image.split = Split::Test;
    image.cocoid = id_of(relative.string());
    try {
      for (std::string& text : references_of(read_alt_text(path))) {
        if (text.size() > kMaxCaptionBytes) throw std::runtime_error(caption_too_long(text.size()));
        Caption caption;
        caption.tokens = clean_caption(text);
        caption.raw = std::move(text);
        image.captions.push_back(std::move(caption));
      }
    } catch (const std::exception& e) {
      dataset.unreadable.push_back(relative.string() + ": " + e.what());
    }
    dataset.images.push_back(std::move(image));
  }
  return dataset;
}

std::string photo_folder_fingerprint(const std::string& folder) {
  std::string listing;
  for (const std::string& path : images_under(folder)) {
    for (const std::string& file : {path, alt_text_sidecar_path(path)}) {
      struct stat info {};
      if (::stat(file.c_str(), &info) != 0) continue;
      listing += file + '\n' + std::to_string(info.st_size) + '\n' + std::to_string(info.st_mtim.tv_sec) + '.' +
                 std::to_string(info.st_mtim.tv_nsec) + '\n';
    }
  }
  return listing;
}

}  // namespace expnet
