// Karpathy's dataset_coco.json read image by image with simdjson On-Demand (no
// document tree), with read_karpathy's rules (dataset_formats.cpp): the same
// images, ids, splits and captions cleaned by clean_caption. Private to the data
// area; simdjson stays inside karpathy_stream.cpp (its own compile flags).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "expnet/data/dataset.h"

namespace expnet {

class KarpathyStream {
 public:
  // Reads FILE (a .json dataset resolved by resolve_dataset) and its top-level
  // keys. Throws std::runtime_error "FILE:LINE: reason, what to do" for a
  // broken file or one without an "images" array.
  KarpathyStream(const std::string& file, const DatasetLoadOptions& options);
  ~KarpathyStream();

  // With format Auto: a top-level "annotations" array makes it a COCO captions file, not Karpathy.
  bool is_coco() const;
  size_t images() const;
  // Calls `add` for each image in file order with its index in "images" and
  // the byte offset where it starts (for place()).
  void read(const std::function<void(DatasetImage&& image, size_t index, size_t offset)>& add);
  // "FILE:LINE: images[INDEX]", for messages about an image read. Safe to call
  // from another thread while read() runs.
  std::string place(size_t index, size_t offset) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace expnet
