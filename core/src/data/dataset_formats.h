// The dataset file formats that load_dataset (expnet/data/dataset.h) reads,
// one reader each. Private to the data area. Each reader throws
// std::runtime_error naming the file, the line or row, the reason and the fix.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "expnet/data/dataset.h"

namespace expnet {

Dataset read_karpathy(const std::string& path, const nlohmann::json& doc);  // dataset_coco.json
Dataset read_coco(const std::string& path, const nlohmann::json& doc);      // COCO's captions_*.json
Dataset read_csv(const std::string& path, const std::string& text);          // rows of image, caption[, split][, id]
Dataset read_jsonl(const std::string& path, const std::string& text);        // one JSON object per line

// Captions longer than this are refused (docs/datasets.md, "Limits"): COCO's
// longest is under 1,000 bytes, and one of hundreds of MB would take
// gigabytes as tokens. The reason, for "<place>: " + caption_too_long(n).
inline constexpr size_t kMaxCaptionBytes = 16384;
std::string caption_too_long(size_t bytes);

// captions_val2014.json -> "val2014": the folder COCO keeps those images in ("" if none).
std::string coco_folder_name(const std::string& path);

// Text helpers the readers share with load_dataset.
std::string lower_ascii(std::string text);
std::string trim(const std::string& text);  // without surrounding spaces, tabs and line ends

}  // namespace expnet
