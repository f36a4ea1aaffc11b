// Header lookup, reason phrases and response serialization.
#include "berth/http/message.h"

#include <algorithm>
#include <cctype>

namespace berth::http {

namespace {
unsigned char Lower(char c) { return static_cast<unsigned char>(std::tolower(static_cast<unsigned char>(c))); }
}  // namespace

bool CaseLess::operator()(const std::string& a, const std::string& b) const {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                      [](char x, char y) { return Lower(x) < Lower(y); });
}

bool EqualsIgnoreCase(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return Lower(x) == Lower(y); });
}

std::string Request::get_header_value(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

std::string Request::get_param_value(const std::string& name) const {
  auto it = params.find(name);
  return it == params.end() ? std::string() : it->second;
}

void Response::set_header(const std::string& name, const std::string& value) {
  // Values with CR or LF would split the response: they are dropped.
  if (name.find_first_of("\r\n:") != std::string::npos || value.find_first_of("\r\n") != std::string::npos) return;
  headers.erase(name);
  headers.emplace(name, value);
}

void Response::set_content(std::string b, const std::string& content_type) {
  body = std::move(b);
  set_header("Content-Type", content_type);
}

const char* ReasonPhrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

std::string Serialize(const Response& res, bool keep_alive, bool head_only) {
  const int status = res.status < 0 ? 200 : res.status;
  std::string out;
  out.reserve(128 + res.body.size());
  out += "HTTP/1.1 " + std::to_string(status) + " " + ReasonPhrase(status) + "\r\n";
  for (const auto& [k, v] : res.headers) {
    if (EqualsIgnoreCase(k, "Content-Length") || EqualsIgnoreCase(k, "Connection") ||
        EqualsIgnoreCase(k, "Transfer-Encoding"))
      continue;
    out += k + ": " + v + "\r\n";
  }
  const bool no_body = status == 204 || status == 304 || (status >= 100 && status < 200);
  if (!no_body) out += "Content-Length: " + std::to_string(res.body.size()) + "\r\n";
  out += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  out += "\r\n";
  if (!head_only && !no_body) out += res.body;
  return out;
}

}  // namespace berth::http
