// The row-file harnesses (CSV, JSONL): one reader of the data area on the
// input as text. Contract: a Dataset or std::runtime_error naming the file and
// line; a dataset read gives statistics and a vocabulary that saves as JSON.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "data/dataset_formats.h"
#include "expnet/data/dataset.h"

namespace expnet_fuzz {

using RowReader = expnet::Dataset (*)(const std::string& path, const std::string& text);

inline int read_rows(RowReader read, const char* name, const uint8_t* data, size_t size) {
  expnet::Dataset dataset;
  try {
    dataset = read(name, std::string(reinterpret_cast<const char*>(data), size));
  } catch (const std::runtime_error&) {
    return 0;
  }
  (void)expnet::compute_stats(dataset, 1, 5);
  // The vocabulary built from it is saved as JSON (expnet dataset vocab, the trainer).
  (void)expnet::build_vocabulary(dataset, 1).vocabulary.to_json();
  return 0;
}

}  // namespace expnet_fuzz
