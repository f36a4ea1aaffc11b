// Pieces shared by the trace readers: the reasons a bad line is counted
// under, a line result that carries its reason, strict date-time parsing, and
// the end-of-file checks every reader makes.
//
//   LineResult ParseLine(...) {
//     BERTH_CHECK_LINE(kNotNumber, f.GetInt("num_gpus", n));
//     if (n < 0) return Bad(kOutOfRange, f.Error("num_gpus: negative value"));
//     return {};
//   }
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "berth/common/csv.h"
#include "berth/common/status.h"
#include "berth/sim/trace.h"

namespace berth::sim {

// Reasons, as counted in ReadReport::skipped_by_reason.
inline constexpr char kWrongWidth[] = "wrong field count";  // truncated or overlong line
inline constexpr char kNotNumber[] = "not a number";
inline constexpr char kOutOfRange[] = "value out of range";  // negative GPUs, bad date, ...
inline constexpr char kBadValue[] = "bad value";             // empty name, inconsistent columns, ...
inline constexpr char kInvalidJob[] = "invalid job";         // fails job::ValidateJob
inline constexpr char kBadJson[] = "bad json";               // native: not a JSON object
inline constexpr char kUnknownKey[] = "unknown key";         // native: a key JobSpec has not
inline constexpr char kWrongType[] = "wrong type";           // native: e.g. a string where a number goes
inline constexpr char kMissingKey[] = "missing key";         // native: no name or no groups
inline constexpr char kDuplicate[] = "duplicate name";       // a job name seen on an earlier line

// The outcome of parsing one line: OK, or an error with the reason it is
// counted under when bad lines are skipped.
struct LineResult {
  Status status;
  const char* reason = "";
  bool ok() const { return status.ok(); }
};
inline LineResult Bad(const char* reason, Status error) { return {std::move(error), reason}; }

// Returns Bad(reason, status) from the enclosing function when `expr` fails.
#define BERTH_CHECK_LINE(reason, expr)                                   \
  do {                                                                   \
    ::berth::Status _line_st = (expr);                                   \
    if (!_line_st.ok()) return ::berth::sim::Bad(reason, std::move(_line_st)); \
  } while (0)

// Seconds since 1970-01-01 00:00:00 of a calendar time "YYYY-MM-DD HH:MM:SS"
// (taken as UTC; no time zone is applied), strictly: two-digit fields, a real
// date, 00..23:00..59:00..59. With `allow_bare_date`, "YYYY-MM-DD" is midnight.
StatusOr<int64_t> ParseDateTime(std::string_view text, bool allow_bare_date = false);
// The inverse of ParseDateTime: "YYYY-MM-DD HH:MM:SS".
std::string FormatDateTime(int64_t seconds);

// "dir/philly.csv" -> "philly".
std::string FileStem(const std::string& path);

// The largest time in seconds a trace may give (about 3,000 years), so that
// SecondsToUs never overflows.
inline constexpr double kMaxTraceSeconds = 1e11;

// Checks a CSV header: every column in `required` is there, and every column
// there is in `known` (an unknown column is usually a typo or another format)
// and appears once. Errors name the file and the header line.
Status CheckColumns(const CsvFile& f, std::span<const char* const> required, std::span<const char* const> known);

// Ends a read: sets report.jobs; an error naming the file when no job is left
// (a file without data lines, every line bad, or every job filtered out).
// `has_header` words the first case for files that have a header line.
Status FinishRead(const std::string& path, Trace& trace, bool has_header);

// Job names already read, to refuse a second job of the same name (formats
// whose names come from the file: tiresias, native).
class NameSet {
 public:
  // 0 when `name` is new (and records it with `line`); else the line it was
  // first seen on.
  int64_t Add(const std::string& name, int64_t line) {
    auto [it, inserted] = first_line_.emplace(name, line);
    return inserted ? 0 : it->second;
  }

 private:
  std::unordered_map<std::string, int64_t> first_line_;
};

// Whether `opts.max_jobs` has been reached by `trace`.
inline bool ReachedMaxJobs(const ReadOptions& opts, const Trace& trace) {
  return opts.max_jobs >= 0 && static_cast<int64_t>(trace.jobs.size()) >= opts.max_jobs;
}

// Takes one parsed line into the trace: a bad line is the read's error, or is
// counted and skipped under --skip-bad-lines; a good job gets the next id.
// Returns whether the read should stop (max_jobs reached).
inline StatusOr<bool> TakeLine(const ReadOptions& opts, Trace& trace, const LineResult& r, job::JobSpec&& job) {
  if (!r.ok()) {
    BERTH_RETURN_IF_ERROR(HandleBadLine(opts, trace.report, r.status, r.reason));
    return false;
  }
  job.id = JobId(static_cast<int64_t>(trace.jobs.size()));
  trace.jobs.push_back(std::move(job));
  return ReachedMaxJobs(opts, trace);
}

}  // namespace berth::sim
