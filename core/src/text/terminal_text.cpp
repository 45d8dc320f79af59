#include "expnet/text/terminal_text.h"

#include <cstdio>

namespace expnet {
namespace {

// Length of the valid UTF-8 sequence starting at text[i], 0 when invalid.
size_t utf8_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((byte(i + k) >> 6) != 0x2) return 0;
  if (n == 2 && c < 0xC2) return 0;                           // overlong
  if (n == 3 && c == 0xE0 && byte(i + 1) < 0xA0) return 0;    // overlong
  if (n == 3 && c == 0xED && byte(i + 1) >= 0xA0) return 0;   // surrogate
  if (n == 4 && (c > 0xF4 || (c == 0xF0 && byte(i + 1) < 0x90) || (c == 0xF4 && byte(i + 1) >= 0x90))) return 0;
  return n;
}

void hex(std::string& out, unsigned char c) {
  char buffer[5];
  std::snprintf(buffer, sizeof buffer, "\\x%02x", c);
  out += buffer;
}

std::string escaped(std::string_view text, bool controls) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_length(text, i);
    const auto c = static_cast<unsigned char>(text[i]);
    const bool control = n == 1 ? (c < 0x20 || c == 0x7F)
                                : n == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0;  // C1
    // A backslash itself is escaped too, so that a name holding the text "\xff"
    // cannot be mistaken for one holding the byte: the escapes are reversible.
    if (n == 0 || (controls && control) || c == '\\') {
      for (size_t k = 0; k < (n == 0 ? 1 : n); ++k) hex(out, static_cast<unsigned char>(text[i + k]));
      i += n == 0 ? 1 : n;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace

std::string terminal_safe(std::string_view text) { return escaped(text, true); }
std::string json_safe(std::string_view text) { return escaped(text, false); }

}  // namespace expnet
