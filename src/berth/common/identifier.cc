// Identifier checks: a small UTF-8 decoder and the refused code points.
#include "berth/common/identifier.h"

#include <cstdint>
#include <cstdio>
#include <string>

namespace berth {
namespace {

std::string CodePoint(uint32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", cp);
  return buf;
}

bool IsBidiControl(uint32_t cp) {
  return cp == 0x200E || cp == 0x200F || cp == 0x061C || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

Status CheckIdentifier(std::string_view where, std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t at = i;
    const auto b0 = static_cast<unsigned char>(s[i]);
    uint32_t cp = 0;
    int len = 0;
    if (b0 < 0x80) {
      cp = b0, len = 1;
    } else if ((b0 & 0xE0) == 0xC0) {
      cp = b0 & 0x1F, len = 2;
    } else if ((b0 & 0xF0) == 0xE0) {
      cp = b0 & 0x0F, len = 3;
    } else if ((b0 & 0xF8) == 0xF0) {
      cp = b0 & 0x07, len = 4;
    } else {
      return InvalidArgument(std::string(where) + ": not valid UTF-8 at byte " + std::to_string(at));
    }
    if (i + len > s.size())
      return InvalidArgument(std::string(where) + ": not valid UTF-8 at byte " + std::to_string(at));
    for (int k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80)
        return InvalidArgument(std::string(where) + ": not valid UTF-8 at byte " + std::to_string(at));
      cp = (cp << 6) | (b & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return InvalidArgument(std::string(where) + ": not valid UTF-8 at byte " + std::to_string(at));
    if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0))
      return InvalidArgument(std::string(where) + ": contains the control character " + CodePoint(cp) +
                             " at byte " + std::to_string(at));
    if (IsBidiControl(cp))
      return InvalidArgument(std::string(where) + ": contains the bidirectional control " + CodePoint(cp) +
                             " at byte " + std::to_string(at));
    i += len;
  }
  return Status::Ok();
}

}  // namespace berth
