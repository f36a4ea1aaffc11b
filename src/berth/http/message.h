// Requests and responses of the event-driven HTTP/1.1 server (server.h). The
// shape follows cpp-httplib's (req.matches, req.body, req.get_header_value,
// res.set_content, ...) so route handlers read the same with either.
#pragma once

#include <cstdint>
#include <map>
#include <regex>
#include <string>
#include <vector>

namespace berth::http {

// Case-insensitive ordering for header names.
struct CaseLess {
  bool operator()(const std::string& a, const std::string& b) const;
};
bool EqualsIgnoreCase(const std::string& a, const std::string& b);

using Headers = std::multimap<std::string, std::string, CaseLess>;
using Params = std::multimap<std::string, std::string>;

struct Request {
  std::string method;   // "GET", "POST", ...
  std::string target;   // as sent: path and query
  std::string path;     // percent-decoded, without the query
  std::string version;  // "HTTP/1.1" or "HTTP/1.0"
  Headers headers;
  Params params;        // the query, decoded
  std::string body;
  std::smatch matches;  // the route pattern's captures, on path
  std::string route;    // the pattern of the route that answered ("" when the server answered itself)
  std::string remote_addr;
  int remote_port = 0;
  // TLS: whether the connection is encrypted, and the subject of the client
  // certificate when one was presented and verified against the client CA.
  bool tls = false;
  bool peer_verified = false;
  std::string peer_subject;  // e.g. "CN=kube-scheduler"
  std::string peer_common_name;

  bool has_header(const std::string& name) const { return headers.count(name) > 0; }
  // The first value of a header ("" when absent).
  std::string get_header_value(const std::string& name) const;
  bool has_param(const std::string& name) const { return params.count(name) > 0; }
  std::string get_param_value(const std::string& name) const;
};

struct Response {
  int status = -1;  // -1: 200 when the handler set content, else 404 (no route)
  Headers headers;
  std::string body;
  // Why the server itself answered an error (framing, limits, deadlines, no
  // route); the error handler turns it into a body.
  std::string error;

  void set_header(const std::string& name, const std::string& value);
  void set_content(std::string body, const std::string& content_type);
};

// The standard reason phrase of a status ("Unknown" for others).
const char* ReasonPhrase(int status);

// Serializes a response head and body; head_only for HEAD requests.
std::string Serialize(const Response& res, bool keep_alive, bool head_only);

}  // namespace berth::http
