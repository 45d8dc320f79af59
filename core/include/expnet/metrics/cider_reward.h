// The CIDEr-D reward of SCST training (docs/metrics.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace expnet {

// The SCST reward: CIDEr-D whose document frequencies and log N come once from
// all training references (the reference training's ReinforceCider), with the
// word EOS appended to every reference and to the candidates.
class CiderDReward {
 public:
  // train_refs[i] = references of training image i, each the words of
  // clean_caption() (expnet/text/caption_text.h), without EOS. Images may have no
  // references (they then count in N and score 0).
  explicit CiderDReward(const std::vector<std::vector<std::vector<std::string>>>& train_refs,
                        std::string eos_word = "EOS");
  ~CiderDReward();
  CiderDReward(CiderDReward&&) noexcept;
  CiderDReward& operator=(CiderDReward&&) noexcept;

  size_t image_count() const;
  const std::string& eos_word() const;

  // candidates[k] (words without EOS; EOS is appended) scored against the
  // references of training image image_indices[k]. Thread-safe (const, no
  // shared scratch). Throws std::out_of_range for a bad image index.
  std::vector<double> score(const std::vector<size_t>& image_indices,
                            const std::vector<std::vector<std::string>>& candidates) const;

  // Token-id mode, for the trainer: tell once how the model's vocabulary
  // spells its ids; eos_id is the model's EOS token.
  void set_vocabulary(const std::vector<std::string>& idx2word, int64_t eos_id);
  // candidates[k] = sampled ids after SOS, as the reference scores them: up to
  // and including the first EOS id (anything after it, e.g. padding, is
  // ignored); a caption that never produced EOS is scored without one.
  // Requires set_vocabulary(); ids outside it throw std::out_of_range.
  std::vector<double> score_ids(const std::vector<size_t>& image_indices,
                                const std::vector<std::vector<int64_t>>& candidates) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace expnet
