// The decoding engine: search strategies behind one interface (CTranslate2
// style), options with defaults, results with tokens, scores and per-token
// log-probs. Strategies drive a StepDecoder, which owns the model-side state
// (caches, encoder output) and is implemented over the model elsewhere.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

// Declared only: callers that pass no tensors compile without LibTorch's headers.
namespace at {
class Tensor;
}  // namespace at

namespace expnet {

enum class SearchKind { Beam, Greedy, Sampling };

// Called once per decoding step (the GUI streams words with it).
struct StepUpdate {
  int64_t image = 0;               // index in the batch
  int step = 0;                    // tokens generated so far (SOS not counted)
  std::vector<int64_t> best;       // the current best hypothesis, SOS first
  bool finished = false;           // this image's search is over
  // PNAIC (group_decoding.h): the word each group got at this step, -1 for a
  // group that had already ended. Empty for AIC.
  std::vector<int64_t> group_words;
};

// Bounds of the options (docs/decoding.md, "Options"): a beam or n-best past
// kMaxBeamSize only multiplies work, and a temperature outside
// [kMinTemperature, kMaxTemperature] makes the scaled log-probs overflow.
inline constexpr int kMaxBeamSize = 256;
inline constexpr int kMaxDecodingLength = 1024;
inline constexpr double kMinTemperature = 1e-3, kMaxTemperature = 1e3;

struct DecodingOptions {
  SearchKind search = SearchKind::Beam;
  int beam_size = 5;
  int num_hypotheses = 1;          // n-best (beam) or samples per image (sampling)
  int max_length = 0;              // counts SOS, like the reference's beam_max_seq_len; 0 = model max_seq_len
  int min_length = 0;              // generated words before EOS is allowed
  // Final ranking score = sum log p / length^alpha, length counting SOS and EOS.
  // 1 = the reference's ranking, 0 = raw sum.
  double length_penalty = 1.0;
  int no_repeat_ngram_size = 0;    // 0 = off
  // 0 = off; N = a word may appear at most N times in a row ("red red red" is
  // banned by 2, while "a red circle left of a red square" stays allowed).
  int max_word_run = 0;
  double repetition_penalty = 1.0; // 1 = off; > 1 makes repeated words less likely
  bool block_bad_endings = false;  // no EOS right after "a", "the", "of", "on", ...
  // Sampling
  double sampling_temperature = 1.0;
  int sampling_topk = 0;           // 0 = full distribution
  double sampling_topp = 1.0;      // 1 = off
  uint64_t seed = 0;
  bool return_token_logprobs = true;
  std::function<void(const StepUpdate&)> on_step;  // optional streaming callback

  // Throws std::invalid_argument with the offending option and its bounds.
  void validate() const;
};

// PNAIC (group_decoding.h): one decoded word group, its words (no SOS, no
// EOS or DEL) and how it ended.
enum class GroupEnd { eos, del, length };
struct WordGroup {
  std::vector<int64_t> tokens;
  GroupEnd end = GroupEnd::length;
  std::vector<float> token_logprobs;  // one per generated token, the closing EOS/DEL included
};

struct Hypothesis {
  std::vector<int64_t> tokens;       // SOS first, EOS last when produced
  double sum_logprob = 0;            // sum of the token log-probs (model's, unmodified)
  double score = 0;                  // ranking score (length penalty applied)
  std::vector<float> token_logprobs; // one per token after SOS
  // PNAIC (group_decoding.h): the K groups this caption was made of, in group
  // order; empty for AIC.
  std::vector<WordGroup> groups;
};

struct DecodingResult {
  std::vector<Hypothesis> hypotheses;  // best first
  int steps = 0;                       // decoder forward passes spent on this image
};

// The model side of decoding. Rows are (image, hypothesis) pairs.
class StepDecoder {
 public:
  virtual ~StepDecoder() = default;
  // Appends one token per row (int64, shape [rows], any device: the decoder
  // moves it to its own) and returns the log-probs
  // of the next token, float [rows, vocab].
  virtual at::Tensor step(const at::Tensor& tokens) = 0;
  // Keeps rows `index` (int64 [new_rows], any device) in that order: beam reordering,
  // expansion to beams, and dropping images whose search is over.
  virtual void select(const at::Tensor& index) = 0;
};

struct SpecialTokens {
  int64_t sos = 1;
  int64_t eos = 2;
  std::vector<int64_t> bad_endings;  // ids of words after which EOS is blocked
};

// Decodes `batch` images whose decoder rows are 0..batch-1 (one row each, no
// token fed yet). Results per image are identical to decoding it alone.
std::vector<DecodingResult> decode(StepDecoder& decoder, int64_t batch, const SpecialTokens& special,
                                   const DecodingOptions& options);

// The word list self-critical.pytorch blocks at the end of a caption.
const std::vector<std::string>& bad_ending_words();

}  // namespace expnet
