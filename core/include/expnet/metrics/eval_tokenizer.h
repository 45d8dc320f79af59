// The evaluation tokenizer of the caption metrics (docs/metrics.md).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace expnet {

// The evaluation tokenizer: the rules of coco-caption's PTB step that matter
// for captions (lower case, punctuation split off, PTB contractions, the
// coco-caption punctuation list dropped). Not the training caption cleaning
// (expnet/text/caption_text.h).
std::vector<std::string> tokenize_for_eval(std::string_view raw);
// The same tokens handed to `token` one by one (each view lives until it returns):
// no string or vector per token, for scorers that only look words up.
void for_each_eval_token(std::string_view raw, const std::function<void(std::string_view)>& token);
// tokenize_for_eval() joined by single spaces.
std::string tokenize_for_eval_text(std::string_view raw);

}  // namespace expnet
