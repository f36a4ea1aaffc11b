// The dashboard's static files, with their content types and caching headers.
#include "berth/server/dashboard.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <system_error>

#include "berth/http/server.h"
#include "berth/server/http_server.h"
#include "berth/server/web_assets.h"

namespace berth::server {

namespace {

// Whether an If-None-Match header names `etag` ("*", a list, weak forms).
bool EtagMatches(const std::string& header, std::string_view etag) {
  if (header.empty()) return false;
  size_t i = 0;
  while (i < header.size()) {
    while (i < header.size() && (header[i] == ' ' || header[i] == ',' || header[i] == '\t')) ++i;
    size_t e = header.find(',', i);
    if (e == std::string::npos) e = header.size();
    std::string_view tag(header.data() + i, e - i);
    while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\t')) tag.remove_suffix(1);
    if (tag.substr(0, 2) == "W/") tag.remove_prefix(2);
    if (tag == "*" || tag == etag) return true;
    i = e + 1;
  }
  return false;
}

constexpr uintmax_t kMaxReportBytes = uintmax_t{256} << 20;

bool IsReportName(const std::string& name) {
  static const std::regex kName(R"([A-Za-z0-9_-][A-Za-z0-9._-]*\.(json|html|htm))");
  return name.size() <= 255 && std::regex_match(name, kName);
}

int64_t ModifiedAt(const std::filesystem::path& p) {
  std::error_code ec;
  auto t = std::filesystem::last_write_time(p, ec);
  if (ec) return 0;
  auto sys = std::chrono::file_clock::to_sys(t);
  return std::chrono::duration_cast<std::chrono::seconds>(sys.time_since_epoch()).count();
}

}  // namespace

void ServeWebAsset(const std::string& path, const http::Request& req, http::Response& res) {
  const WebAsset* a = FindWebAsset(path);
  if (!a) {
    res.status = 404;
    res.error = "no dashboard file '" + path + "'";
    return;
  }
  res.set_header("ETag", std::string(a->etag));
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Content-Type-Options", "nosniff");
  if (a->path == "index.html") {
    // Its own scripts and styles; uploaded HTML reports render in a sandboxed
    // frame without scripts (their CSS is inline).
    res.set_header("Content-Security-Policy",
                   "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                   "img-src 'self' data: blob:; connect-src 'self' http: https:; frame-src 'self' blob: data:; "
                   "object-src 'none'; base-uri 'self'; frame-ancestors 'self'");
    res.set_header("X-Frame-Options", "SAMEORIGIN");
    res.set_header("Referrer-Policy", "same-origin");
  }
  if (EtagMatches(req.get_header_value("If-None-Match"), a->etag)) {
    res.status = 304;
    return;
  }
  res.status = 200;
  res.set_content(std::string(a->body), std::string(a->content_type));
}

void InstallDashboard(http::Server& s) {
  s.Get("/", [](const http::Request& req, http::Response& res) { ServeWebAsset("index.html", req, res); });
  s.Get("/index.html", [](const http::Request& req, http::Response& res) { ServeWebAsset("index.html", req, res); });
  s.Get(R"(/ui/([A-Za-z0-9_./-]+))", [](const http::Request& req, http::Response& res) {
    const std::string path = req.matches[1];
    if (path.find("..") != std::string::npos) {
      res.status = 404;
      res.error = "no dashboard file '" + path + "'";
      return;
    }
    ServeWebAsset(path, req, res);
  });
}

void InstallReports(http::Server& s, const std::string& dir) {
  namespace fs = std::filesystem;
  s.Get("/v1/reports", [dir](const http::Request&, http::Response& res) {
    std::error_code ec;
    std::vector<nlohmann::json> items;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      std::error_code e2;
      if (!IsReportName(name) || !it->is_regular_file(e2)) continue;
      items.push_back({{"name", name}, {"bytes", it->file_size(e2)}, {"modified_at", ModifiedAt(it->path())}});
    }
    if (ec) return SendJson(res, ApiResult::Error(500, "--reports " + dir + ": " + ec.message()));
    std::sort(items.begin(), items.end(),
              [](const auto& a, const auto& b) { return a["name"].template get<std::string>() < b["name"].template get<std::string>(); });
    SendJson(res, ApiResult{200, {{"reports", items}}});
  }, http::RunOn::kHeavy);
  s.Get(R"(/v1/reports/([^/]+))", [dir](const http::Request& req, http::Response& res) {
    const std::string name = req.matches[1];
    if (!IsReportName(name))
      return SendJson(res, ApiResult::Error(404, "no report '" + name.substr(0, 200) + "' (names end in .json, .html or .htm)"));
    const fs::path path = fs::path(dir) / name;
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) return SendJson(res, ApiResult::Error(404, "no report '" + name + "'"));
    if (fs::file_size(path, ec) > kMaxReportBytes)
      return SendJson(res, ApiResult::Error(413, "report '" + name + "' is over 256 MiB"));
    std::ifstream in(path, std::ios::binary);
    std::ostringstream body;
    body << in.rdbuf();
    if (!in && !in.eof()) return SendJson(res, ApiResult::Error(500, "report '" + name + "': cannot read"));
    const bool json = name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0;
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Content-Type-Options", "nosniff");
    if (!json) res.set_header("Content-Security-Policy", "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:");
    res.status = 200;
    res.set_content(body.str(), json ? "application/json" : "text/html; charset=utf-8");
  }, http::RunOn::kHeavy);
}

}  // namespace berth::server
