// Text that comes from files (tensor names, keys, file names) made safe to
// print: a name may hold terminal escape sequences (which move the cursor or
// recolour the terminal) or bytes that are not UTF-8 (which nlohmann-json
// refuses to dump). Both are written as \xNN, so nothing is lost from sight.
#pragma once

#include <string>
#include <string_view>

namespace expnet {

// Control characters (C0, DEL, C1), bytes of invalid UTF-8 and the backslash
// as \xNN (reversible: every backslash in the result starts an escape); the
// rest, valid UTF-8 included, unchanged.
std::string terminal_safe(std::string_view text);
// Invalid UTF-8 bytes and the backslash as \xNN (JSON escapes control
// characters itself).
std::string json_safe(std::string_view text);

}  // namespace expnet
