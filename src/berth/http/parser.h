// An incremental HTTP/1.1 request parser with limits checked while reading:
// the request line (414), the header block and header count (431), and the
// body for every transfer encoding (Content-Length and chunked: 413 as soon as
// the declared or accumulated size passes the limit, before the bytes are
// buffered). Malformed framing answers 400; other transfer codings 501; other
// HTTP versions 505. A request with both Transfer-Encoding and Content-Length
// is refused (400), never guessed at.
//
//   RequestParser p(limits);
//   size_t used = p.Feed(data, n);   // bytes consumed; the rest belongs to the next request
//   if (p.failed()) answer p.error_status() / p.error_message();
//   if (p.done()) handle p.request();
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "berth/http/message.h"

namespace berth::http {

struct ParserLimits {
  size_t max_request_line = 8 << 10;   // 414 beyond
  size_t max_header_bytes = 32 << 10;  // request line and headers together; 431 beyond
  size_t max_headers = 100;            // 431 beyond
  size_t max_body_bytes = 1 << 20;     // 413 beyond, whatever the transfer encoding
};

// The body limit of one request, decided from its request line and headers
// (per route); at most ParserLimits::max_body_bytes whatever it answers.
using BodyLimit = std::function<size_t(const Request&)>;

class RequestParser {
 public:
  explicit RequestParser(ParserLimits limits, BodyLimit body_limit = nullptr)
      : limits_(limits), body_limit_fn_(std::move(body_limit)), body_limit_(limits.max_body_bytes) {}

  // Consumes bytes of one request; returns how many were used (all of them
  // until the request is complete or has failed).
  size_t Feed(const char* data, size_t n);

  bool started() const { return started_; }
  bool headers_done() const { return phase_ > kHeaders; }
  bool done() const { return phase_ == kDone; }
  bool failed() const { return phase_ == kError; }
  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }
  // Headers asked "Expect: 100-continue" and a body follows.
  bool expects_continue() const { return expects_continue_; }
  // Whether the connection may carry another request after this one.
  bool keep_alive() const { return keep_alive_; }
  Request& request() { return req_; }
  // Ready for the next request on the same connection.
  void Reset();

 private:
  enum Phase { kRequestLine, kHeaders, kBody, kChunkSize, kChunkData, kChunkEnd, kTrailers, kDone, kError };
  void Fail(int status, std::string message);
  void OnLine(const std::string& line);
  void OnRequestLine(const std::string& line);
  void OnHeaderLine(const std::string& line);
  void OnHeadersDone();
  void OnChunkSize(const std::string& line);

  ParserLimits limits_;
  BodyLimit body_limit_fn_;
  size_t body_limit_;  // of the request being read
  Phase phase_ = kRequestLine;
  bool started_ = false;
  std::string line_;
  size_t header_bytes_ = 0;
  size_t header_count_ = 0;
  int empty_lines_ = 0;
  uint64_t remaining_ = 0;
  bool expects_continue_ = false;
  bool keep_alive_ = true;
  int error_status_ = 0;
  std::string error_message_;
  Request req_;
};

// Percent-decodes a path (plus_as_space false) or a query component (true);
// nullopt-like false on a bad escape or a NUL.
bool PercentDecode(const std::string& in, bool plus_as_space, std::string* out);

}  // namespace berth::http
