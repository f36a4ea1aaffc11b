// The request parser's state machine (see parser.h).
#include "berth/http/parser.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace berth::http {

namespace {

constexpr size_t kMaxChunkLine = 1024;  // chunk size and extensions
constexpr int kMaxLeadingEmptyLines = 4;

bool IsTokenChar(unsigned char c) {
  return std::isalnum(c) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

bool IsToken(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c != '\0' && IsTokenChar(static_cast<unsigned char>(c)); });
}

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return s.substr(b, e - b);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Shown in error messages: at most 40 characters, control bytes escaped.
std::string Shown(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size() && out.size() < 40; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (out.size() >= 40 && s.size() > 40) out += "...";
  return out;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool PercentDecode(const std::string& in, bool plus_as_space, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      int hi = HexValue(in[i + 1]), lo = HexValue(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      c = static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (c == '+' && plus_as_space) {
      c = ' ';
    }
    if (c == '\0') return false;
    out->push_back(c);
  }
  return true;
}

void RequestParser::Reset() {
  phase_ = kRequestLine;
  started_ = false;
  line_.clear();
  header_bytes_ = 0;
  header_count_ = 0;
  empty_lines_ = 0;
  remaining_ = 0;
  expects_continue_ = false;
  keep_alive_ = true;
  error_status_ = 0;
  error_message_.clear();
  req_ = Request();
  body_limit_ = limits_.max_body_bytes;
}

void RequestParser::Fail(int status, std::string message) {
  phase_ = kError;
  error_status_ = status;
  error_message_ = std::move(message);
  keep_alive_ = false;
}

size_t RequestParser::Feed(const char* data, size_t n) {
  size_t i = 0;
  if (n > 0) started_ = true;
  while (i < n && phase_ != kDone && phase_ != kError) {
    if (phase_ == kBody || phase_ == kChunkData) {
      const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, n - i));
      // Chunked bodies grow by doubling, but never past the limit's capacity.
      if (req_.body.capacity() < req_.body.size() + take)
        req_.body.reserve(std::min(std::max(req_.body.capacity() * 2, req_.body.size() + take), body_limit_));
      req_.body.append(data + i, take);
      remaining_ -= take;
      i += take;
      if (remaining_ == 0) phase_ = phase_ == kBody ? kDone : kChunkEnd;
      continue;
    }
    // Line-oriented phases: the limit is checked before the line is complete.
    const void* nl = std::memchr(data + i, '\n', n - i);
    const size_t upto = nl ? static_cast<size_t>(static_cast<const char*>(nl) - (data + i)) : n - i;
    size_t limit;
    switch (phase_) {
      case kRequestLine: limit = limits_.max_request_line; break;
      case kChunkSize: limit = kMaxChunkLine; break;
      case kChunkEnd: limit = 2; break;
      default: limit = limits_.max_header_bytes; break;
    }
    if (line_.size() + upto > limit) {
      if (phase_ == kRequestLine) Fail(414, "request line longer than " + std::to_string(limit) + " bytes");
      else if (phase_ == kChunkSize) Fail(400, "chunk size line longer than " + std::to_string(limit) + " bytes");
      else if (phase_ == kChunkEnd) Fail(400, "malformed chunked body: expected CRLF after chunk data");
      else Fail(431, "request header fields larger than " + std::to_string(limits_.max_header_bytes) + " bytes");
      return n;
    }
    if (phase_ == kRequestLine || phase_ == kHeaders || phase_ == kTrailers) {
      header_bytes_ += upto + (nl ? 1 : 0);
      if (header_bytes_ > limits_.max_header_bytes) {
        Fail(431, "request header fields larger than " + std::to_string(limits_.max_header_bytes) + " bytes");
        return n;
      }
    }
    line_.append(data + i, upto);
    i += upto;
    if (!nl) break;
    ++i;  // the LF
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    std::string line;
    line.swap(line_);
    OnLine(line);
  }
  return i;
}

void RequestParser::OnLine(const std::string& line) {
  switch (phase_) {
    case kRequestLine:
      if (line.empty()) {  // tolerated before a request (RFC 9112 2.2)
        if (++empty_lines_ > kMaxLeadingEmptyLines) Fail(400, "empty lines instead of a request line");
        return;
      }
      return OnRequestLine(line);
    case kHeaders:
      return OnHeaderLine(line);
    case kChunkSize:
      return OnChunkSize(line);
    case kChunkEnd:
      if (!line.empty()) return Fail(400, "malformed chunked body: expected CRLF after chunk data");
      phase_ = kChunkSize;
      return;
    case kTrailers:
      if (line.empty()) phase_ = kDone;  // trailer fields are read and dropped
      return;
    default:
      return;
  }
}

void RequestParser::OnRequestLine(const std::string& line) {
  const size_t a = line.find(' ');
  const size_t b = a == std::string::npos ? a : line.find(' ', a + 1);
  if (a == std::string::npos || b == std::string::npos || line.find(' ', b + 1) != std::string::npos)
    return Fail(400, "malformed request line '" + Shown(line) + "': expected METHOD TARGET HTTP/1.1");
  req_.method = line.substr(0, a);
  req_.target = line.substr(a + 1, b - a - 1);
  req_.version = line.substr(b + 1);
  if (!IsToken(req_.method) || req_.method.size() > 32) return Fail(400, "malformed method '" + Shown(req_.method) + "'");
  if (req_.version != "HTTP/1.1" && req_.version != "HTTP/1.0") {
    if (req_.version.rfind("HTTP/", 0) == 0) return Fail(505, "HTTP version '" + Shown(req_.version) + "' not supported (HTTP/1.1 or 1.0)");
    return Fail(400, "malformed request line '" + Shown(line) + "': expected METHOD TARGET HTTP/1.1");
  }
  if (req_.version == "HTTP/1.0") keep_alive_ = false;
  for (char c : req_.target) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return Fail(400, "request target with a control character");
  }
  std::string target = req_.target;
  if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0) {  // absolute form
    const size_t slash = target.find('/', target.find("//") + 2);
    target = slash == std::string::npos ? "/" : target.substr(slash);
  }
  if (target == "*") {
    req_.path = "*";
    phase_ = kHeaders;
    return;
  }
  if (target.empty() || target[0] != '/') return Fail(400, "request target '" + Shown(req_.target) + "': expected a path starting with /");
  const size_t q = target.find('?');
  const std::string raw_path = target.substr(0, q);
  if (!PercentDecode(raw_path, false, &req_.path)) return Fail(400, "path '" + Shown(raw_path) + "': bad percent-escape");
  if (q != std::string::npos) {
    const std::string query = target.substr(q + 1);
    size_t start = 0;
    while (start <= query.size()) {
      size_t amp = query.find('&', start);
      if (amp == std::string::npos) amp = query.size();
      const std::string part = query.substr(start, amp - start);
      if (!part.empty()) {
        const size_t eq = part.find('=');
        std::string k, v;
        if (!PercentDecode(part.substr(0, eq), true, &k) ||
            (eq != std::string::npos && !PercentDecode(part.substr(eq + 1), true, &v)))
          return Fail(400, "query '" + Shown(part) + "': bad percent-escape");
        req_.params.emplace(std::move(k), std::move(v));
      }
      start = amp + 1;
    }
  }
  phase_ = kHeaders;
}

void RequestParser::OnHeaderLine(const std::string& line) {
  if (line.empty()) return OnHeadersDone();
  if (line[0] == ' ' || line[0] == '\t') return Fail(400, "obsolete header line folding is not accepted");
  if (++header_count_ > limits_.max_headers)
    return Fail(431, "more than " + std::to_string(limits_.max_headers) + " header fields");
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return Fail(400, "malformed header line '" + Shown(line) + "': expected NAME: VALUE");
  std::string name = line.substr(0, colon);
  if (!IsToken(name)) return Fail(400, "malformed header name '" + Shown(name) + "'");
  std::string value = Trim(line.substr(colon + 1));
  for (char c : value) {
    unsigned char u = static_cast<unsigned char>(c);
    if ((u < 0x20 && u != '\t') || u == 0x7f) return Fail(400, "header " + name + ": control character in the value");
  }
  req_.headers.emplace(std::move(name), std::move(value));
}

void RequestParser::OnHeadersDone() {
  body_limit_ = limits_.max_body_bytes;
  if (body_limit_fn_) body_limit_ = std::min(body_limit_, body_limit_fn_(req_));
  // Connection: close / keep-alive.
  for (auto [it, end] = req_.headers.equal_range("Connection"); it != end; ++it) {
    const std::string v = Lower(it->second);
    if (v.find("close") != std::string::npos) keep_alive_ = false;
    else if (v.find("keep-alive") != std::string::npos && req_.version == "HTTP/1.0") keep_alive_ = true;
  }
  const bool has_te = req_.headers.count("Transfer-Encoding") > 0;
  const bool has_cl = req_.headers.count("Content-Length") > 0;
  if (has_te && has_cl) return Fail(400, "both Transfer-Encoding and Content-Length: refused");
  if (has_te) {
    if (req_.version == "HTTP/1.0") return Fail(400, "Transfer-Encoding in an HTTP/1.0 request");
    std::string codings;
    for (auto [it, end] = req_.headers.equal_range("Transfer-Encoding"); it != end; ++it)
      codings += (codings.empty() ? "" : ",") + it->second;
    if (Lower(Trim(codings)) != "chunked")
      return Fail(501, "Transfer-Encoding '" + Shown(codings) + "' not supported (only chunked)");
    phase_ = kChunkSize;
  } else if (has_cl) {
    std::string first;
    for (auto [it, end] = req_.headers.equal_range("Content-Length"); it != end; ++it) {
      const std::string& v = it->second;
      if (v.empty() || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        if (!v.empty() && v[0] == '-') return Fail(400, "Content-Length '" + Shown(v) + "': negative");
        return Fail(400, "Content-Length '" + Shown(v) + "': not a non-negative integer");
      }
      if (!first.empty() && v != first) return Fail(400, "conflicting Content-Length values");
      first = v;
    }
    size_t digits = first.find_first_not_of('0');
    const std::string sig = digits == std::string::npos ? "0" : first.substr(digits);
    if (sig.size() > 18) return Fail(413, "Content-Length " + Shown(first) + " over the limit of " + std::to_string(body_limit_) + " bytes");
    remaining_ = std::stoull(sig);
    if (remaining_ > body_limit_)
      return Fail(413, "Content-Length " + sig + " over the limit of " + std::to_string(body_limit_) + " bytes" +
                           (body_limit_ < limits_.max_body_bytes ? " for " + req_.method + " " + req_.path : ""));
    phase_ = remaining_ > 0 ? kBody : kDone;
    if (remaining_ > 0) req_.body.reserve(static_cast<size_t>(remaining_));
  } else {
    phase_ = kDone;
  }
  if (phase_ != kDone) {
    for (auto [it, end] = req_.headers.equal_range("Expect"); it != end; ++it)
      if (Lower(it->second) == "100-continue") expects_continue_ = true;
  }
}

void RequestParser::OnChunkSize(const std::string& line) {
  std::string size = line.substr(0, line.find(';'));
  size = Trim(size);
  if (size.empty()) return Fail(400, "malformed chunked body: empty chunk size");
  uint64_t v = 0;
  size_t i = 0;
  while (i < size.size() && size[i] == '0') ++i;
  if (size.size() - i > 15) return Fail(413, "chunk size " + Shown(size) + " over the body limit of " + std::to_string(body_limit_) + " bytes");
  for (; i < size.size(); ++i) {
    int h = HexValue(size[i]);
    if (h < 0) return Fail(400, "malformed chunk size '" + Shown(size) + "': expected hex digits");
    v = v * 16 + static_cast<uint64_t>(h);
  }
  if (v == 0) {
    phase_ = kTrailers;
    header_bytes_ = 0;
    return;
  }
  if (req_.body.size() + v > body_limit_)
    return Fail(413, "chunked body over the limit of " + std::to_string(body_limit_) + " bytes");
  remaining_ = v;
  phase_ = kChunkData;
}

}  // namespace berth::http
