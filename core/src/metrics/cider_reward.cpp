// The SCST reward: CIDEr-D with document frequencies from all training
// references, computed once (the reference training's ReinforceCiderScorer).
// Per call the reference vectors of each distinct image are built once and
// shared by all of its candidates; lookups go through integer-keyed flat maps.
#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "expnet/metrics/cider_reward.h"
#include "metrics/metric_tables.h"

namespace expnet {

using metrics_detail::CiderDModel;
using metrics_detail::CiderEntry;
using metrics_detail::CiderVector;
using metrics_detail::kLocalBit;
using metrics_detail::kNone;
using metrics_detail::NgramScratch;

struct CiderDReward::Impl {
  std::string eos_word;
  metrics_detail::WordTable words;
  uint32_t eos_id = 0;
  std::vector<uint32_t> reference_words;       // all references back to back, EOS included
  std::vector<size_t> reference_offsets{0};    // sentence i = [offsets[i], offsets[i+1])
  std::vector<size_t> image_first_reference{0};  // image i = sentences [first[i], first[i+1])
  CiderDModel model;
  // Token-id mode: model vocabulary id -> word id (or a local id when no
  // reference has the word).
  std::vector<uint32_t> vocabulary_to_word;
  int64_t vocabulary_eos = -1;

  // Buffers of one call.
  struct Scratch {
    NgramScratch ngrams;
    std::vector<CiderEntry> candidate_arena, reference_arena;
    std::vector<CiderVector> reference_vectors;
    std::vector<uint32_t> candidate_words;
    std::vector<std::string_view> unseen_words;
  };

  void check_index(size_t image) const {
    if (image >= image_count())
      throw std::out_of_range("CIDEr-D reward: image index " + std::to_string(image) + " is outside the " +
                              std::to_string(image_count()) + " training images");
  }
  size_t image_count() const { return image_first_reference.size() - 1; }

  void load_references(size_t image, Scratch& s) const {
    s.reference_arena.clear();
    s.reference_vectors.clear();
    for (size_t r = image_first_reference[image]; r < image_first_reference[image + 1]; ++r) {
      const uint32_t* words = reference_words.data() + reference_offsets[r];
      const size_t size = reference_offsets[r + 1] - reference_offsets[r];
      metrics_detail::sentence_ngrams(nullptr, model.index(), words, size, s.ngrams);
      s.reference_vectors.push_back(model.make_vector(s.ngrams, s.reference_arena, size));
    }
  }

  double score_candidate(Scratch& s) const {
    s.candidate_arena.clear();
    metrics_detail::sentence_ngrams(nullptr, model.index(), s.candidate_words.data(), s.candidate_words.size(),
                                    s.ngrams);
    const CiderVector candidate = model.make_vector(s.ngrams, s.candidate_arena, s.candidate_words.size());
    return metrics_detail::cider_d_score(candidate, s.candidate_arena, s.reference_vectors, s.reference_arena);
  }

  // Scores candidates grouped by image, so each image's references are
  // vectorised once per call. fill(k, scratch) writes candidate k's word ids.
  template <typename Fill>
  std::vector<double> score_grouped(const std::vector<size_t>& image_indices, size_t candidates, Fill fill) const {
    if (image_indices.size() != candidates)
      throw std::invalid_argument("CIDEr-D reward: " + std::to_string(image_indices.size()) + " image indices for " +
                                  std::to_string(candidates) + " candidates");
    for (const size_t image : image_indices) check_index(image);
    std::vector<size_t> order(candidates);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return image_indices[a] < image_indices[b]; });
    std::vector<double> rewards(candidates, 0.0);
    Scratch s;
    size_t loaded = static_cast<size_t>(-1);
    for (const size_t k : order) {
      if (image_indices[k] != loaded) {
        loaded = image_indices[k];
        load_references(loaded, s);
      }
      fill(k, s);
      rewards[k] = score_candidate(s);
    }
    return rewards;
  }
};

CiderDReward::CiderDReward(const std::vector<std::vector<std::vector<std::string>>>& train_refs, std::string eos_word)
    : impl_(std::make_unique<Impl>()) {
  if (train_refs.empty()) throw std::invalid_argument("CIDEr-D reward: no training images given");
  Impl& d = *impl_;
  d.eos_word = std::move(eos_word);
  d.eos_id = d.words.intern(d.eos_word);
  for (const auto& image_refs : train_refs) {
    for (const auto& reference : image_refs) {
      for (const auto& word : reference)
        if (!word.empty()) d.reference_words.push_back(d.words.intern(word));
      d.reference_words.push_back(d.eos_id);
      d.reference_offsets.push_back(d.reference_words.size());
    }
    d.image_first_reference.push_back(d.reference_offsets.size() - 1);
  }
  std::vector<std::pair<const uint32_t*, size_t>> references;
  for (size_t image = 0; image < d.image_count(); ++image) {
    references.clear();
    for (size_t r = d.image_first_reference[image]; r < d.image_first_reference[image + 1]; ++r)
      references.emplace_back(d.reference_words.data() + d.reference_offsets[r],
                              d.reference_offsets[r + 1] - d.reference_offsets[r]);
    d.model.add_image_references(references);
  }
  d.model.finish();
}

CiderDReward::~CiderDReward() = default;
CiderDReward::CiderDReward(CiderDReward&&) noexcept = default;
CiderDReward& CiderDReward::operator=(CiderDReward&&) noexcept = default;

size_t CiderDReward::image_count() const { return impl_->image_count(); }
const std::string& CiderDReward::eos_word() const { return impl_->eos_word; }

std::vector<double> CiderDReward::score(const std::vector<size_t>& image_indices,
                                        const std::vector<std::vector<std::string>>& candidates) const {
  const Impl& d = *impl_;
  return d.score_grouped(image_indices, candidates.size(), [&](size_t k, Impl::Scratch& s) {
    s.candidate_words.clear();
    s.unseen_words.clear();
    for (const auto& word : candidates[k]) {
      if (word.empty()) continue;
      uint32_t id = d.words.find(word);
      if (id == kNone) {
        // A word no reference has: equal words share one local id.
        const auto it = std::find(s.unseen_words.begin(), s.unseen_words.end(), std::string_view(word));
        id = kLocalBit | static_cast<uint32_t>(it - s.unseen_words.begin());
        if (it == s.unseen_words.end()) s.unseen_words.emplace_back(word);
      }
      s.candidate_words.push_back(id);
    }
    s.candidate_words.push_back(d.eos_id);
  });
}

void CiderDReward::set_vocabulary(const std::vector<std::string>& idx2word, int64_t eos_id) {
  if (idx2word.size() >= kLocalBit) throw std::invalid_argument("CIDEr-D reward: vocabulary too large");
  if (eos_id < 0 || static_cast<size_t>(eos_id) >= idx2word.size())
    throw std::out_of_range("CIDEr-D reward: EOS id " + std::to_string(eos_id) + " is outside the vocabulary of " +
                            std::to_string(idx2word.size()) + " words");
  Impl& d = *impl_;
  d.vocabulary_to_word.resize(idx2word.size());
  for (size_t i = 0; i < idx2word.size(); ++i) {
    const uint32_t id = d.words.find(idx2word[i]);
    d.vocabulary_to_word[i] = id != kNone ? id : (kLocalBit | static_cast<uint32_t>(i));
  }
  d.vocabulary_eos = eos_id;
}

std::vector<double> CiderDReward::score_ids(const std::vector<size_t>& image_indices,
                                            const std::vector<std::vector<int64_t>>& candidates) const {
  const Impl& d = *impl_;
  if (d.vocabulary_eos < 0) throw std::logic_error("CIDEr-D reward: score_ids() needs set_vocabulary() first");
  for (const auto& candidate : candidates)
    for (const int64_t id : candidate)
      if (id < 0 || static_cast<size_t>(id) >= d.vocabulary_to_word.size())
        throw std::out_of_range("CIDEr-D reward: token id " + std::to_string(id) + " is outside the vocabulary of " +
                                std::to_string(d.vocabulary_to_word.size()) + " words");
  return d.score_grouped(image_indices, candidates.size(), [&](size_t k, Impl::Scratch& s) {
    s.candidate_words.clear();
    for (const int64_t id : candidates[k]) {
      if (id == d.vocabulary_eos) {
        s.candidate_words.push_back(d.eos_id);
        break;
      }
      s.candidate_words.push_back(d.vocabulary_to_word[static_cast<size_t>(id)]);
    }
  });
}

}  // namespace expnet
