// The evaluation tokenizer: the part of coco-caption's PTB step (Stanford
// PTBTokenizer -lowerCase, then its punctuation list removed) that matters for
// captions. The rules, with their known deviations, are in docs/metrics.md.
#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "expnet/text/caption_text.h"
#include "expnet/metrics/eval_tokenizer.h"

namespace expnet {
namespace {

bool is_space(char32_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}
bool is_digit(char32_t c) { return c >= '0' && c <= '9'; }
bool is_apostrophe(char32_t c) { return c == '\'' || c == 0x2019; }
// Quotes become `` '' ` ' in PTB, all of which coco-caption drops.
bool is_quote(char32_t c) {
  return c == '"' || c == '`' || c == 0x2018 || c == 0x201C || c == 0x201D || c == 0x201E || c == 0x201A;
}
// ( ) { } become -LRB- -RRB- -LCB- -RCB-, which coco-caption drops; [ ] are
// dropped too (see docs/metrics.md).
bool is_bracket(char32_t c) { return c == '(' || c == ')' || c == '[' || c == ']' || c == '{' || c == '}'; }

// A sentence's pieces, as PTB splits them: those coco-caption keeps go to `token`
// in UTF-8. Pieces are views of the sentence (no string per piece).
struct Tokens {
  const std::function<void(std::string_view)>& token;
  std::string utf8;  // the current token's bytes, reused
  void add(std::u32string_view piece);
};

// A character that joins the word characters around it into one token:
// hyphenated words, decimals, abbreviations, "1,000", "10:30", "and/or",
// "at&t", "o'clock".
bool joins_inside(std::u32string_view chunk, size_t j) {
  if (j == 0 || j + 1 >= chunk.size()) return false;
  const char32_t before = chunk[j - 1], c = chunk[j], after = chunk[j + 1];
  if (!is_unicode_alnum(before) || !is_unicode_alnum(after)) return false;
  switch (c) {
    case '-': case '.': case '/': case '&': case '_': return true;
    case ',': case ':': return is_digit(before) && is_digit(after);
    default: return is_apostrophe(c);
  }
}

bool ends_with(std::u32string_view s, std::u32string_view suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// PTB splits these words in two after their third letter ("cannot" -> "can not",
// "gonna" -> "gon na").
constexpr std::array<std::string_view, 6> kFusedWords = {"cannot", "gonna", "gotta", "wanna", "gimme", "lemme"};
constexpr size_t kFusedCut = 3;

template <typename Char>
bool is_fused_word(std::basic_string_view<Char> word) {
  return std::any_of(kFusedWords.begin(), kFusedWords.end(), [&](std::string_view fused) {
    return std::equal(word.begin(), word.end(), fused.begin(), fused.end(),
                      [](Char a, char b) { return a == static_cast<Char>(b); });
  });
}

bool split_fused_word(std::u32string_view word, Tokens& out) {
  if (!is_fused_word(word)) return false;
  out.add(word.substr(0, kFusedCut));
  out.add(word.substr(kFusedCut));
  return true;
}

// A word (apostrophes normalised to ') loses its PTB contraction suffix:
// "don't" -> "do n't", "dog's" -> "dog 's", "we're" -> "we 're".
void emit_word(std::u32string_view word, Tokens& out) {
  if (word.find(char32_t(0x2019)) != std::u32string_view::npos) {
    std::u32string normalised(word);
    std::replace(normalised.begin(), normalised.end(), char32_t(0x2019), char32_t('\''));
    return emit_word(normalised, out);
  }
  if (split_fused_word(word, out)) return;
  if (ends_with(word, U"n't")) {
    out.add(word.substr(0, word.size() - 3));
    out.add(U"n't");
    return;
  }
  for (std::u32string_view suffix : {U"'s", U"'re", U"'ve", U"'ll", U"'m", U"'d"}) {
    if (ends_with(word, suffix)) {
      out.add(word.substr(0, word.size() - suffix.size()));
      out.add(suffix);
      return;
    }
  }
  out.add(word);
}

// "'s" written apart from its word ("john 's") stays one token.
size_t detached_suffix_length(std::u32string_view chunk, size_t i) {
  for (std::u32string_view suffix : {U"s", U"re", U"ve", U"ll", U"m", U"d"}) {
    const size_t end = i + 1 + suffix.size();
    if (end > chunk.size() || chunk.compare(i + 1, suffix.size(), suffix) != 0) continue;
    if (end == chunk.size() || !is_unicode_alnum(chunk[end])) return suffix.size() + 1;
  }
  return 0;
}

void split_chunk(std::u32string_view chunk, Tokens& out) {
  size_t i = 0;
  while (i < chunk.size()) {
    const char32_t c = chunk[i];
    if (is_unicode_alnum(c)) {
      size_t j = i + 1;
      while (j < chunk.size() && (is_unicode_alnum(chunk[j]) || joins_inside(chunk, j))) ++j;
      emit_word(chunk.substr(i, j - i), out);
      i = j;
    } else if (c == '.' || c == '-') {
      size_t j = i + 1;
      while (j < chunk.size() && chunk[j] == c) ++j;
      // Runs of dots are PTB's "..." and runs of hyphens its "--": both dropped.
      out.add(j - i == 1 ? chunk.substr(i, 1) : c == '.' ? U"..." : U"--");
      i = j;
    } else if (is_apostrophe(c)) {
      const size_t suffix = detached_suffix_length(chunk, i);
      if (suffix > 0) {
        out.add(U"'" + std::u32string(chunk.substr(i + 1, suffix - 1)));
        i += suffix;
      } else {
        out.add(U"'");
        ++i;
      }
    } else if (is_quote(c) || is_bracket(c)) {
      ++i;  // never reaches the scorers
    } else {
      out.add(chunk.substr(i, 1));  // other symbols (# $ % & + = ...) are tokens
      ++i;
    }
  }
}

bool is_dropped(std::u32string_view token) {
  static const std::array<std::u32string_view, 13> dropped = {U"''", U"'",  U"``", U"`",  U".",  U"?",  U"!",
                                                             U",",  U":",  U"-",  U"--", U"...", U";"};
  return std::find(dropped.begin(), dropped.end(), token) != dropped.end();
}

void Tokens::add(std::u32string_view piece) {
  if (piece.empty() || is_dropped(piece)) return;
  utf8.clear();
  append_utf8(piece, utf8);
  token(utf8);
}

// A chunk (no space inside) through the full rules: lower case in UTF-32, then PTB's splits.
void split_utf8_chunk(std::string_view chunk, Tokens& out) {
  std::u32string text = utf8_to_u32(std::string(chunk));
  for (auto& c : text) c = unicode_lower(c);
  split_chunk(text, out);
}

bool is_ascii_space(char c) { return is_space(static_cast<unsigned char>(c)); }

// Most caption chunks are a plain ASCII word, maybe ending the sentence with a full
// stop: split_chunk() would give that word lowercased (the stop is dropped), so it is
// handed over as is, without UTF-32. Anything else takes split_utf8_chunk().
void split_ascii_chunk(std::string_view chunk, Tokens& out) {
  const size_t word_size = chunk.size() > 1 && chunk.back() == '.' ? chunk.size() - 1 : chunk.size();
  out.utf8.clear();
  for (size_t k = 0; k < word_size; ++k) {
    const char c = chunk[k];
    const auto code = static_cast<unsigned char>(c);
    if (!is_unicode_alnum(code)) return split_utf8_chunk(chunk, out);
    out.utf8.push_back(static_cast<char>(unicode_lower(code)));
  }
  if (is_fused_word(std::string_view(out.utf8))) return split_utf8_chunk(chunk, out);
  out.token(out.utf8);
}

// Calls split(chunk) for each run of characters between spaces.
template <typename Char, typename IsSpace, typename Split>
void for_each_chunk(std::basic_string_view<Char> text, IsSpace is_space, Split split) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    size_t j = i;
    while (j < text.size() && !is_space(text[j])) ++j;
    if (j > i) split(text.substr(i, j - i));
    i = j;
  }
}

}  // namespace

void for_each_eval_token(std::string_view raw, const std::function<void(std::string_view)>& token) {
  Tokens out{token, {}};
  // Every space outside ASCII is a multi-byte character, so an all-ASCII text can be
  // cut at its ASCII spaces byte by byte.
  if (std::all_of(raw.begin(), raw.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; })) {
    for_each_chunk(raw, is_ascii_space, [&](std::string_view chunk) { split_ascii_chunk(chunk, out); });
    return;
  }
  std::u32string text = utf8_to_u32(std::string(raw));
  for (auto& c : text) c = unicode_lower(c);
  for_each_chunk(std::u32string_view(text), is_space, [&](std::u32string_view chunk) { split_chunk(chunk, out); });
}

std::vector<std::string> tokenize_for_eval(std::string_view raw) {
  std::vector<std::string> tokens;
  for_each_eval_token(raw, [&](std::string_view token) { tokens.emplace_back(token); });
  return tokens;
}

std::string tokenize_for_eval_text(std::string_view raw) {
  std::string joined;
  for (const auto& token : tokenize_for_eval(raw)) {
    if (!joined.empty()) joined.push_back(' ');
    joined += token;
  }
  return joined;
}

}  // namespace expnet
