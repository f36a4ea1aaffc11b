// Fuzz target: the incremental HTTP/1.1 request parser (http/parser.h) under
// its limits. The same bytes are fed whole and in pieces of a size taken
// from the first input byte; both must read the same requests (method, path,
// query, headers, body) and fail with the same status, every body within
// its limit, and no Feed may use more bytes than it was given.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "berth/http/parser.h"

namespace {

struct Outcome {
  std::vector<std::string> requests;  // one line per complete request
  int error = 0;
  bool operator==(const Outcome&) const = default;
};

std::string Describe(berth::http::Request& r) {
  std::string s = r.method + " " + r.path + " " + r.version + "\n";
  for (const auto& [k, v] : r.params) s += "?" + k + "=" + v + "\n";
  for (const auto& [k, v] : r.headers) s += k + ": " + v + "\n";
  return s + "body " + std::to_string(r.body.size()) + ":" + r.body;
}

Outcome Run(const std::string& in, size_t piece) {
  berth::http::ParserLimits limits;
  limits.max_request_line = 256;
  limits.max_header_bytes = 1024;
  limits.max_headers = 16;
  limits.max_body_bytes = 4096;
  // Paths under /small take 64 bytes: the per-route limit path.
  berth::http::RequestParser p(limits, [](const berth::http::Request& r) {
    return r.path.rfind("/small", 0) == 0 ? size_t{64} : size_t{1} << 40;
  });
  Outcome out;
  size_t off = 0;
  std::string pending;  // bytes fed but not used by the request that ended
  while (off < in.size() || !pending.empty()) {
    std::string chunk = pending;
    pending.clear();
    if (chunk.empty()) {
      chunk = in.substr(off, piece);
      off += chunk.size();
    }
    const size_t used = p.Feed(chunk.data(), chunk.size());
    if (used > chunk.size()) std::abort();
    if (p.failed()) {
      out.error = p.error_status();
      if (out.error < 400 || out.error > 505) std::abort();
      return out;
    }
    if (p.done()) {
      berth::http::Request& r = p.request();
      const size_t limit = r.path.rfind("/small", 0) == 0 ? 64 : limits.max_body_bytes;
      if (r.body.size() > limit) std::abort();
      out.requests.push_back(Describe(r));
      if (out.requests.size() > 64) return out;
      p.Reset();
      pending = chunk.substr(used);
    } else if (used != chunk.size()) {
      std::abort();  // an unfinished request uses all it is given
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t piece = 1 + data[0] % 17;
  const std::string in(reinterpret_cast<const char*>(data) + 1, size - 1);
  const Outcome whole = Run(in, in.size() + 1);
  const Outcome pieces = Run(in, piece);
  if (!(whole == pieces)) std::abort();
  return 0;
}
