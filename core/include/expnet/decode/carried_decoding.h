// Decoding options a checkpoint of ours carries: the JSON object stored as
// "expnet_decoding" (docs/checkpoints.md), holding only the keys that are set,
// e.g. {"beam_size": 3, "max_word_run": 1}. The recipe's "decoding" key puts it
// there (docs/training.md); `expnet caption`, `explain` and the studio's pages
// start from it, and every option the user gives overrides it
// (docs/decoding.md, "Options a checkpoint carries"). The authors' released
// checkpoints carry none, so their decoding stays the reference's.
#pragma once

#include <string>
#include <vector>

#include "expnet/decode/decoding.h"

namespace expnet {

// The names a search strategy has in JSON, on the command line and in the studio.
const char* search_kind_name(SearchKind kind);  // "beam", "greedy", "sample"
// Throws std::invalid_argument naming the word when it is none of those.
SearchKind parse_search_kind(const std::string& name);

// The keys, in the order the JSON writes them: search ("beam", "greedy" or
// "sample"), beam_size, num_hypotheses, max_length, min_length, length_penalty,
// no_repeat_ngram_size, max_word_run, repetition_penalty, block_bad_endings,
// sampling_temperature, sampling_topk, sampling_topp, seed: DecodingOptions' fields.
const std::vector<std::string>& decoding_option_keys();

// Every key of `options` as one compact JSON object, in that order (what was used to decode).
std::string decoding_options_json(const DecodingOptions& options);

struct CarriedDecoding {
  DecodingOptions options;        // the defaults, with the carried keys set
  std::vector<std::string> keys;  // the carried keys, in decoding_option_keys() order

  bool empty() const { return keys.empty(); }
  bool carries(const std::string& key) const;
  // `base` with every carried key set, except the keys in `keep` (given by the user).
  DecodingOptions apply_to(DecodingOptions base, const std::vector<std::string>& keep = {}) const;
  // {"beam_size":3,...}: the carried keys only, in the keys' order ("{}" when none).
  std::string to_json() const;
  // "beam_size 3, max_word_run 1" without the keys in `skip`; "" when nothing is left.
  std::string describe(const std::vector<std::string>& skip = {}) const;

  // Strict: an unknown key, a value of the wrong type or out of range is a
  // std::runtime_error naming `source` and the key.
  static CarriedDecoding from_json(const std::string& text, const std::string& source);
};

}  // namespace expnet
