// JSON from untrusted bytes (API bodies, extender calls, store records, API
// server answers) into nlohmann::json, without unbounded recursion: the
// document is built from nlohmann's SAX events by an iterative builder that
// refuses, while parsing and before anything is copied or printed,
//   - a body larger than `max_bytes`,
//   - nesting deeper than `max_depth` arrays/objects (64 by default), and
//   - an object that repeats a key (no silent "last one wins").
// A parsed value is therefore at most `max_depth` deep, so nlohmann's own
// recursive operations on it (copy, dump, compare) are bounded.
//
//   StatusOr<nlohmann::json> v = json::ParseUntrusted(body);
//   // InvalidArgument "duplicate key 'groups' in an object (at byte 57)"
//
// Excerpt() shows a value in an error message without serializing it whole.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "berth/common/status.h"

namespace berth::json {

struct ParseLimits {
  size_t max_bytes = size_t{16} << 20;  // 16 MiB: the HTTP body limit (whole NodeLists)
  int max_depth = 64;                  // arrays and objects, the outermost counting 1
  bool allow_duplicate_keys = false;
};

// The document in `text`, or InvalidArgument naming what is wrong and the
// 1-based byte position where it was found: "malformed JSON: ...", "nesting
// deeper than 64 levels (at byte 65)" (the bracket that opens level 65),
// "duplicate key \"name\" in an object (at byte 31)" (the key's closing
// quote), "body of 20000000 bytes is over the limit of 16777216".
StatusOr<nlohmann::json> ParseUntrusted(std::string_view text, const ParseLimits& limits = {});

// At most about `max_chars` characters showing `v` (JSON text, cut with
// "..."), produced by visiting only as much of `v` as is shown.
std::string Excerpt(const nlohmann::json& v, size_t max_chars = 40);
// The first `max_chars` bytes of arbitrary text, as a JSON string literal
// (quotes, escapes, invalid UTF-8 replaced), followed by "..." when cut.
std::string ExcerptText(std::string_view text, size_t max_chars = 40);

}  // namespace berth::json
