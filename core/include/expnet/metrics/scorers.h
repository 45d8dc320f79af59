// Caption metrics equal to the public COCO caption scorers (pycocoevalcap):
// BLEU-1..4, ROUGE-L and CIDEr-D, per image and corpus, plus the CIDEr-D reward
// of SCST training. METEOR and SPICE need coco-caption's Java tools and are not
// computed here. Rules and deviations: docs/metrics.md.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace expnet {

// Words allowed in one caption (candidate or reference). ROUGE-L's longest
// common subsequence takes time proportional to the product of two captions'
// lengths: at this limit a fraction of a second (docs/performance.md, "Figures behind choices in the code"); a 10 MB caption (2 million
// words) against itself would take hours. COCO captions have 5 to 50 words.
constexpr size_t kMaxCaptionWords = 10000;
// Raw text refused before tokenizing (add_raw): 100 bytes per allowed word.
constexpr size_t kMaxCaptionBytes = 100 * kMaxCaptionWords;

// A caption over kMaxCaptionWords: `reference` is -1 for the candidate, else
// the index of the reference; what() names the image and the caption.
class CaptionTooLong : public std::length_error {
 public:
  CaptionTooLong(const std::string& message, long reference) : std::length_error(message), reference_(reference) {}
  long reference() const { return reference_; }

 private:
  long reference_;
};

// The evaluated images: one candidate and at least one reference per image,
// held as word ids (each distinct word is interned once).
class EvalSet {
 public:
  struct Sentence {
    const uint32_t* words = nullptr;
    size_t size = 0;
  };

  EvalSet();
  ~EvalSet();
  EvalSet(EvalSet&&) noexcept;
  EvalSet& operator=(EvalSet&&) noexcept;

  // Already tokenized sentences. Throws std::invalid_argument when
  // `references` is empty, CaptionTooLong when a sentence has more than
  // kMaxCaptionWords words.
  void add(std::string image_id, const std::vector<std::string>& candidate,
           const std::vector<std::vector<std::string>>& references);
  // Raw sentences, run through tokenize_for_eval() first; CaptionTooLong also
  // for a sentence over kMaxCaptionBytes, before it is tokenized.
  void add_raw(std::string image_id, std::string_view candidate, const std::vector<std::string>& references);
  // add_raw for many images, in order, their sentences tokenized on all the
  // machine's cores: the same set, the same errors as add_raw one by one.
  struct RawImage {
    std::string id;
    std::string_view candidate;
    const std::vector<std::string>* references = nullptr;
  };
  void add_raw_all(const std::vector<RawImage>& images);

  size_t size() const { return images_.size(); }
  const std::string& image_id(size_t image) const { return images_[image].id; }
  Sentence candidate(size_t image) const;
  size_t reference_count(size_t image) const { return images_[image].reference_count; }
  Sentence reference(size_t image, size_t r) const;
  // Number of distinct words; word ids are 0 .. vocabulary_size() - 1.
  uint32_t vocabulary_size() const;

 private:
  struct Image {
    std::string id;
    size_t first_sentence = 0;  // the candidate; references follow it
    size_t reference_count = 0;
  };
  uint32_t add_sentence(const std::vector<std::string>& words);

  struct Words;
  std::unique_ptr<Words> words_;
  std::vector<uint32_t> word_ids_;        // all sentences back to back
  std::vector<size_t> sentence_offsets_;  // begin of sentence i; one extra end
  std::vector<Image> images_;
};

struct BleuScores {
  std::array<double, 4> corpus{};                  // Bleu_1..Bleu_4
  std::vector<std::array<double, 4>> per_image;    // in EvalSet order
};
struct MetricScores {
  double corpus = 0;
  std::vector<double> per_image;
};

// BLEU as pycocoevalcap's Bleu(4): clipped n-gram counts against the maximum
// count over the references, "closest" reference length, its 1e-15 / 1e-9
// smoothing constants, and the per-image scores of the same scorer.
BleuScores compute_bleu(const EvalSet& set);
// ROUGE-L as pycocoevalcap's Rouge: LCS against each reference, best precision
// and best recall, F-measure with beta 1.2; corpus = mean of images.
MetricScores compute_rouge_l(const EvalSet& set);
// CIDEr-D as pycocoevalcap's Cider: n = 1..4, tf-idf with document
// frequencies over the references of this set and log(number of images),
// clipped counts, Gaussian length penalty sigma 6, mean over n, x10.
MetricScores compute_cider_d(const EvalSet& set);

}  // namespace expnet
