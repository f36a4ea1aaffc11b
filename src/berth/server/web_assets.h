// The dashboard's files (web/ in the source tree), built into the binary:
// cmake/EmbedWeb.cmake turns every file under web/ into a generated source
// (web_assets.cc in the build folder) with its bytes, content type and an
// ETag made from a hash of its content. dashboard.h serves them.
//
//   const WebAsset* a = FindWebAsset("index.html");   // null when absent
#pragma once

#include <span>
#include <string_view>

namespace berth::server {

struct WebAsset {
  std::string_view path;          // relative to web/, e.g. "app.js", "pages/jobs.js"
  std::string_view content_type;  // e.g. "text/javascript; charset=utf-8"
  std::string_view etag;          // quoted, e.g. "\"3f2a...\""
  std::string_view body;
};

// Every embedded file, sorted by path.
std::span<const WebAsset> WebAssets();
// The file at `path` (relative to web/), or null.
const WebAsset* FindWebAsset(std::string_view path);

}  // namespace berth::server
