// Checks for names and other identifiers that reach logs, metrics labels and
// other people's terminals: valid UTF-8 without control characters (C0, DEL,
// C1) or the bidirectional formatting characters that reorder what is shown
// (U+200E, U+200F, U+061C, U+202A..U+202E, U+2066..U+2069).
//
//   CheckIdentifier("name", "llm\u202Etxt.exe")
//     -> InvalidArgument "name: contains the bidirectional control U+202E at byte 3"
#pragma once

#include <string_view>

#include "berth/common/status.h"

namespace berth {

// OK, or InvalidArgument "WHERE: ..." naming the first offending character and
// its 0-based byte offset.
Status CheckIdentifier(std::string_view where, std::string_view text);

}  // namespace berth
