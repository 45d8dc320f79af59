#include "expnet/text/caption_text.h"

#include <algorithm>
#include <array>
#include <locale>

namespace expnet {
namespace {

// glibc's C.UTF-8 carries the full Unicode character classes; a process-wide
// locale object keeps the global C locale untouched.
const std::ctype<wchar_t>& unicode_ctype() {
  static const std::locale locale = [] {
    try {
      return std::locale("C.UTF-8");
    } catch (const std::exception&) {
      return std::locale::classic();  // ASCII-only fallback
    }
  }();
  return std::use_facet<std::ctype<wchar_t>>(locale);
}

bool is_dropped(const std::string& token) {
  static const std::array<const char*, 13> dropped = {"''", "'", "``", "`", ".", "?", "!", ",", ":", "-", "--", "...", ";"};
  return std::any_of(dropped.begin(), dropped.end(), [&](const char* d) { return token == d; });
}

}  // namespace

std::u32string utf8_to_u32(const std::string& text) {
  std::u32string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    int extra = byte < 0x80 ? 0 : (byte >> 5) == 0x6 ? 1 : (byte >> 4) == 0xE ? 2 : (byte >> 3) == 0x1E ? 3 : -1;
    char32_t code = extra == 0 ? byte : extra == 1 ? (byte & 0x1F) : extra == 2 ? (byte & 0x0F) : (byte & 0x07);
    bool valid = extra >= 0 && i + static_cast<size_t>(extra) < text.size();
    for (int k = 1; valid && k <= extra; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) valid = false;
      code = (code << 6) | (next & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are invalid too
    // (as for Python's decode): re-encoded they would not be UTF-8 that JSON accepts.
    static constexpr char32_t kShortest[] = {0, 0x80, 0x800, 0x10000};
    if (valid && (code < kShortest[extra] || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF)) valid = false;
    if (!valid) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(code);
    i += static_cast<size_t>(extra) + 1;
  }
  return out;
}

std::string u32_to_utf8(std::u32string_view text) {
  std::string out;
  append_utf8(text, out);
  return out;
}

void append_utf8(std::u32string_view text, std::string& out) {
  out.reserve(out.size() + text.size());
  for (const char32_t c : text) {
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (c >> 12)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (c >> 18)));
      out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
}

bool is_unicode_alnum(char32_t c) {
  if (c < 0x80) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  return unicode_ctype().is(std::ctype_base::alnum, static_cast<wchar_t>(c));
}

char32_t unicode_lower(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  return static_cast<char32_t>(unicode_ctype().tolower(static_cast<wchar_t>(c)));
}

std::vector<std::string> clean_caption(const std::string& raw) {
  std::vector<std::string> tokens;
  std::u32string word;
  auto flush = [&] {
    if (!word.empty()) tokens.push_back(u32_to_utf8(word));
    word.clear();
  };
  for (const char32_t c : utf8_to_u32(raw)) {
    const char32_t lower = unicode_lower(c);
    if (is_unicode_alnum(lower)) {
      word.push_back(lower);
      continue;
    }
    flush();
    if (lower == U' ' || lower == U'\t' || lower == U'\n' || lower == U'\r' || lower == 0xA0 || lower == 0x3000 ||
        unicode_ctype().is(std::ctype_base::space, static_cast<wchar_t>(lower)))
      continue;
    const std::string symbol = u32_to_utf8(std::u32string(1, lower));
    if (!is_dropped(symbol)) tokens.push_back(symbol);
  }
  flush();
  return tokens;
}

std::string clean_caption_text(const std::string& raw) {
  std::string out;
  for (const auto& token : clean_caption(raw)) {
    if (!out.empty()) out += ' ';
    out += token;
  }
  return out;
}

}  // namespace expnet
