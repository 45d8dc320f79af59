// What a query of the dataset index (DatasetIndex::query, dataset_index.h)
// asks for (split, words, order, page, an evaluation to join) and returns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace expnet {

// Order of the matching images (ties by cocoid). caption_length: the mean
// number of cleaned tokens of the image's captions, shortest first
// (caption_length_descending: longest first). By score: the images of an
// evaluation (see IndexQuery::evaluation), CIDEr-D ascending = worst first;
// images it has not scored (or that failed) come last, by cocoid.
enum class IndexSort { id, caption_length, score_ascending, score_descending, caption_length_descending };

struct IndexQuery {
  std::string split;  // "" = all splits
  std::string text;   // words every matching caption contains (cleaned like captions); "" = all
  int64_t page = 1;   // 1-based
  int64_t page_size = 20;
  bool count_total = true;  // also count all matching images (one more query)
  IndexSort sort = IndexSort::id;
  // Per-sample evaluation to join (expnet/metrics/sample_evaluation.h): its
  // store file and evaluation id; empty/0 = none. Fills IndexedImage's model
  // caption and scores, and allows sorting by score.
  std::string evaluation_db;
  int64_t evaluation_id = 0;
};

struct IndexedImage {
  int64_t cocoid = 0;
  std::string filepath, filename, split;
  int width = 0, height = 0;
  double caption_length = 0;          // mean cleaned tokens per caption (what IndexSort::caption_length sorts by)
  std::vector<std::string> captions;  // raw, in file order
  // With IndexQuery::evaluation: the model's caption and its scores, when scored.
  bool evaluated = false;
  std::string model_caption;
  double cider_d = 0, bleu4 = 0;
};

struct IndexPage {
  std::vector<IndexedImage> images;
  int64_t total = -1;  // matching images; -1 when not counted
};

// The FTS5 query for a user's words: each cleaned word quoted, all required.
std::string fts_query_for(const std::string& words);

}  // namespace expnet
