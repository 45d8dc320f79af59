// Text that comes from files (tensor names, keys, file names) made safe to
// print: a name may hold terminal escape sequences (which move the cursor or
// recolour the terminal) or bytes that are not UTF-8 (which nlohmann-json
// refuses to dump). Both are written as \xNN, so nothing is lost from sight.
#pragma once

#include <string>
#include <string_view>

namespace expnet::cli {

// Control characters (C0, DEL, C1) and bytes of invalid UTF-8 as \xNN; the
// rest, valid UTF-8 included, unchanged.
std::string terminal_safe(std::string_view text);
// Invalid UTF-8 bytes as \xNN (JSON escapes control characters itself).
std::string json_safe(std::string_view text);

}  // namespace expnet::cli
