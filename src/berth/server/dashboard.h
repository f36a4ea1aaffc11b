// The web dashboard's routes (docs/dashboard.md): GET / answers the page
// (web/index.html), GET /ui/PATH the other files under web/, from the copies
// built into the binary (web_assets.h). Open like the API's reads: the page
// holds no data, and the reads it makes are the JSON API's.
//
// Caching: every answer carries an ETag (a hash of the file) and
// Cache-Control: no-cache, so a browser revalidates and gets 304 Not Modified
// until the binary serves a different file. The page carries a
// Content-Security-Policy that allows only its own scripts.
//
// --reports DIR adds the simulation reports in DIR (InstallReports).
#pragma once

#include <string>

namespace berth::http { class Server; struct Request; struct Response; }

namespace berth::server {

// Adds the dashboard's routes to `server`.
void InstallDashboard(http::Server& server);

// `berth serve --reports DIR`: simulation reports for the dashboard's Reports
// page, read-only, from the files directly in `dir` named *.json, *.html or
// *.htm (names of letters, digits, '.', '_' and '-', not starting with '.'):
//   GET /v1/reports          {"reports": [{"name", "bytes", "modified_at"}]} by name
//   GET /v1/reports/NAME     the file (application/json or text/html; HTML with
//                            a sandbox policy, so it never runs scripts here)
// Files over 256 MiB answer 413.
void InstallReports(http::Server& server, const std::string& dir);

// Answers the embedded file `path` (relative to web/) for `req`: 200 with the
// file, 304 when the request's If-None-Match names its ETag, 404 when absent.
void ServeWebAsset(const std::string& path, const http::Request& req, http::Response& res);

}  // namespace berth::server
