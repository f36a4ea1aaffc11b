// The request-trace reader and the serving-time model.
#include "berth/sim/request_trace.h"

#include <cmath>
#include <cstdio>
#include <fstream>

#include "berth/common/csv.h"

namespace berth::sim {
namespace {

// Seconds since 2000-01-01 of "YYYY-MM-DD HH:MM:SS[.fraction]" (UTC), or -1.
double ParseStamp(const std::string& s) {
  int y, mo, d, h, mi;
  double sec;
  if (std::sscanf(s.c_str(), "%d-%d-%d %d:%d:%lf", &y, &mo, &d, &h, &mi, &sec) != 6) return -1;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec >= 61) return -1;
  // Days from civil (Howard Hinnant's algorithm).
  y -= mo <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const int yoe = y - era * 400;
  const int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = int64_t{era} * 146097 + doe - 719468;
  return static_cast<double>(days) * 86400.0 + h * 3600.0 + mi * 60.0 + sec;
}

}  // namespace

StatusOr<RequestTrace> ReadRequestTrace(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound(path + ": cannot open file");
  std::string line;
  int64_t line_no = 0;
  RequestTrace t;
  double first = -1, ctx = 0, gen = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line_no == 1) {
      if (line.rfind("\xEF\xBB\xBF", 0) == 0) line = line.substr(3);
      if (line.rfind("TIMESTAMP", 0) != 0)
        return InvalidArgument(path + ":1: expected the header TIMESTAMP,ContextTokens,GeneratedTokens");
      continue;
    }
    if (line.empty()) continue;
    const size_t a = line.find(','), b = line.find(',', a == std::string::npos ? a : a + 1);
    if (a == std::string::npos || b == std::string::npos)
      return InvalidArgument(path + ":" + std::to_string(line_no) + ": expected 3 columns");
    const double stamp = ParseStamp(line.substr(0, a));
    int64_t c = 0, g = 0;
    if (stamp < 0) return InvalidArgument(path + ":" + std::to_string(line_no) + ": bad TIMESTAMP '" + line.substr(0, a) + "'");
    if (!ParseInt64(line.substr(a + 1, b - a - 1), c).ok() || !ParseInt64(line.substr(b + 1), g).ok() || c < 0 || g < 0)
      return InvalidArgument(path + ":" + std::to_string(line_no) + ": token counts must be integers >= 0");
    if (first < 0) first = stamp;
    if (stamp < first) return InvalidArgument(path + ":" + std::to_string(line_no) + ": timestamps out of order");
    const auto minute = static_cast<size_t>((stamp - first) / 60.0);
    if (minute >= t.per_minute.size()) t.per_minute.resize(minute + 1, 0);
    ++t.per_minute[minute];
    ctx += static_cast<double>(c);
    gen += static_cast<double>(g);
    ++t.requests;
  }
  if (t.requests == 0) return InvalidArgument(path + ": no requests");
  t.mean_context_tokens = ctx / static_cast<double>(t.requests);
  t.mean_generated_tokens = gen / static_cast<double>(t.requests);
  return t;
}

Status ServingModel::Validate() const {
  if (!(prefill_us_per_token >= 0) || !(decode_us_per_token >= 0) || prefill_us_per_token + decode_us_per_token <= 0)
    return InvalidArgument("serving: prefill_ms_per_token and decode_ms_per_token must be >= 0, not both 0");
  if (batch < 1) return InvalidArgument("serving: batch must be at least 1");
  return Status::Ok();
}

int64_t ServingModel::CapacityMilliRps(double context_tokens, double generated_tokens) const {
  const double hold_us = prefill_us_per_token * context_tokens + decode_us_per_token * generated_tokens;
  if (hold_us <= 0) return 0;
  return std::max<int64_t>(1, std::llround(1000.0 * batch * 1e6 / hold_us));
}

}  // namespace berth::sim
