// Shared reader pieces: date-times, file stems, end-of-read checks.
#include "berth/sim/readers/reader_util.h"

#include <chrono>
#include <cstdio>

namespace berth::sim {
namespace {

// Reads `n` digits at `pos`; false if any is not a digit.
bool Digits(std::string_view s, size_t pos, size_t n, int& out) {
  out = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

}  // namespace

StatusOr<int64_t> ParseDateTime(std::string_view text, bool allow_bare_date) {
  const bool bare = text.size() == 10;
  const std::string want = allow_bare_date ? "YYYY-MM-DD or YYYY-MM-DD HH:MM:SS" : "YYYY-MM-DD HH:MM:SS";
  auto bad = [&](std::string_view why) {
    std::string m = "'";
    m.append(text).append("' is not a date-time ").append(want);
    if (!why.empty()) m.append(": ").append(why);
    return InvalidArgument(std::move(m));
  };
  if (!(text.size() == 19 || (bare && allow_bare_date))) return bad("");
  int y, mo, d, h = 0, mi = 0, s = 0;
  if (!Digits(text, 0, 4, y) || text[4] != '-' || !Digits(text, 5, 2, mo) || text[7] != '-' ||
      !Digits(text, 8, 2, d))
    return bad("");
  if (!bare) {
    if (text[10] != ' ' || !Digits(text, 11, 2, h) || text[13] != ':' || !Digits(text, 14, 2, mi) ||
        text[16] != ':' || !Digits(text, 17, 2, s))
      return bad("");
    if (h > 23 || mi > 59 || s > 59) return bad("time of day out of range");
  }
  const std::chrono::year_month_day ymd{std::chrono::year{y}, std::chrono::month{static_cast<unsigned>(mo)},
                                        std::chrono::day{static_cast<unsigned>(d)}};
  if (!ymd.ok()) return bad("no such date");
  const int64_t days = std::chrono::sys_days{ymd}.time_since_epoch().count();
  return days * 86400 + h * 3600 + mi * 60 + s;
}

std::string FormatDateTime(int64_t seconds) {
  const int64_t days = seconds >= 0 ? seconds / 86400 : -((-seconds + 86399) / 86400);
  const int64_t rest = seconds - days * 86400;
  const std::chrono::year_month_day ymd{std::chrono::sys_days{std::chrono::days{days}}};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02u %02d:%02d:%02d", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), static_cast<int>(rest / 3600),
                static_cast<int>(rest / 60 % 60), static_cast<int>(rest % 60));
  return buf;
}

std::string FileStem(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = base.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

Status CheckColumns(const CsvFile& f, std::span<const char* const> required, std::span<const char* const> known) {
  auto list = [](std::span<const char* const> cols) {
    std::string s;
    for (const char* c : cols) s += std::string(s.empty() ? "" : ",") + c;
    return s;
  };
  const auto& header = f.header();
  for (size_t i = 0; i < header.size(); ++i) {
    bool ok = false;
    for (const char* k : known) ok = ok || header[i] == k;
    if (!ok) return f.Error("unknown column '" + header[i] + "' (known: " + list(known) + ")");
    for (size_t j = 0; j < i; ++j)
      if (header[j] == header[i]) return f.Error("column '" + header[i] + "' appears twice");
  }
  for (const char* c : required)
    if (!f.HasColumn(c)) return f.Error("missing column '" + std::string(c) + "' (required: " + list(required) + ")");
  return Status::Ok();
}

Status FinishRead(const std::string& path, Trace& trace, bool has_header) {
  ReadReport& r = trace.report;
  r.jobs = static_cast<int64_t>(trace.jobs.size());
  if (r.jobs > 0 || !trace.workflows.empty()) return Status::Ok();
  if (r.lines == 0)
    return InvalidArgument(path + (has_header ? ": no jobs in the file (a header line but no data lines)"
                                              : ": no jobs in the file (no data lines)"));
  std::string why;
  if (r.skipped) why += std::to_string(r.skipped) + " bad line(s) skipped";
  if (r.filtered) why += std::string(why.empty() ? "" : ", ") + std::to_string(r.filtered) + " left out by filters";
  return InvalidArgument(path + ": no jobs left (" + why + ")");
}

}  // namespace berth::sim
