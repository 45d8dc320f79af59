// The training-side caption cleaning of the reference (spec, "Captions"):
// lower case; every character that is neither a letter nor a digit (Unicode)
// becomes its own token; then '' ' `` ` . ? ! , : - -- ... ; are dropped.
// Used for training captions, vocabulary building and SCST references.
// (The evaluation tokenizer of the COCO scorers is a different thing: metrics.)
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace expnet {

std::vector<std::string> clean_caption(const std::string& raw);
// clean_caption() joined by single spaces.
std::string clean_caption_text(const std::string& raw);

// UTF-8 helpers shared by the text code: invalid bytes decode as U+FFFD.
std::u32string utf8_to_u32(const std::string& text);
std::string u32_to_utf8(std::u32string_view text);
// u32_to_utf8 appended to `out` (a reused buffer allocates nothing).
void append_utf8(std::u32string_view text, std::string& out);
bool is_unicode_alnum(char32_t c);
char32_t unicode_lower(char32_t c);

}  // namespace expnet
