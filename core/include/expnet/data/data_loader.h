// The training data path: seeded shuffling, batches grouped by caption length,
// worker threads that decode and preprocess images ahead of the trainer, the
// reference's two sampling modes, and an exact saveable state.
//
// Every epoch's batch plan is a pure function of (seed, epoch), so a state of
// (seed, epoch, position) restores the exact same batch sequence.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "expnet/data/dataset.h"
#include "expnet/text/vocabulary.h"

namespace expnet {

enum class SamplingMode {
  CaptionWise,  // cross-entropy: one (image, caption) pair per item, every caption once per epoch
  ImageWise,    // SCST: one image per item with all its references, every image once per epoch
};

struct LoaderOptions {
  SamplingMode mode = SamplingMode::CaptionWise;
  int64_t batch_size = 48;
  uint64_t seed = 1;
  int workers = 2;            // image decoding threads
  int prefetch = 4;           // batches prepared ahead
  bool group_by_length = true;  // caption-wise: similar lengths share a batch (less padding)
  int64_t max_words = 20;     // caption tokens kept (the reference's max_seq_len), before EOS
  bool training_splits = true;  // train + restval; false: the splits below
  std::vector<Split> splits;
  // Data-parallel shard: every process plans the same global batches of
  // batch_size items and builds only its contiguous slice
  // [size*rank/count, size*(rank+1)/count) of each (disjoint, deterministic,
  // resumable with the same state everywhere).
  int shard_rank = 0, shard_count = 1;
};

// Where the loader is: the next batch is batch `position` of epoch `epoch`.
struct LoaderState {
  uint64_t seed = 1;
  int64_t epoch = 0;
  int64_t position = 0;
  std::string to_json() const;
  static LoaderState from_json(const std::string& text);  // throws std::runtime_error
};

struct Batch {
  int64_t epoch = 0, position = 0;
  std::vector<size_t> image_indices;  // into Dataset::images
  std::vector<int64_t> cocoids;
  std::vector<cv::Mat> images;        // what the ImageSource returned, per item
  // Token ids [captions x length], SOS w1 .. wn EOS PAD..., row-major: one row
  // per item caption-wise, every caption of every image image-wise.
  std::vector<int64_t> tokens;
  int64_t length = 0;                 // columns of `tokens`
  std::vector<int64_t> caption_lengths;  // words + 2 (SOS, EOS) per row of `tokens`
  std::vector<int64_t> caption_items;    // the item (index into image_indices) of each row
  // Image-wise: every reference of each image, cleaned text (not mapped to UNK).
  std::vector<std::vector<std::string>> references;
  size_t size() const { return image_indices.size(); }
};

class DataLoader {
 public:
  // source may be empty: batches then carry no images (a feature-cache trainer).
  DataLoader(const Dataset& dataset, Vocabulary vocabulary, LoaderOptions options, ImageSource source);
  ~DataLoader();

  // The next batch; crosses into the next epoch by itself. Rethrows an image
  // error (std::runtime_error naming the file) of that batch.
  Batch next();
  LoaderState state() const;
  // Continues exactly where `state` was taken (same seed required).
  void restore(const LoaderState& state);
  int64_t batches_per_epoch() const;
  int64_t items_per_epoch() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace expnet
