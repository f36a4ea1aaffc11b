// Traces: a list of jobs read from a file, with a report of what was read and
// what was skipped. Every reader validates each line; a bad line either stops
// the read (an error naming file and line) or is skipped and counted, as the
// caller chooses.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "berth/common/status.h"
#include "berth/job/job.h"

namespace berth::sim {

struct ReadOptions {
  bool skip_bad_lines = false;  // false: the first bad line is an error
  int64_t max_jobs = -1;        // stop after this many jobs (-1: all)
};

struct ReadReport {
  int64_t lines = 0;    // data lines seen
  int64_t jobs = 0;     // jobs produced
  int64_t skipped = 0;  // bad lines skipped
  std::map<std::string, int64_t> skipped_by_reason;  // reason -> count
  std::vector<std::string> examples;  // the first few skipped lines' errors ("file:line: why")

  // Records a skipped line; `reason` is a short category, `error` the full message.
  void Skip(const std::string& reason, const std::string& error);
  std::string Summary() const;
};

struct Trace {
  std::vector<job::JobSpec> jobs;
  ReadReport report;
  std::string format;
};

// Handles one bad line under `opts`: returns the error when not skipping, OK
// (after counting it) when skipping.
Status HandleBadLine(const ReadOptions& opts, ReadReport& report, const Status& error, const std::string& reason);

}  // namespace berth::sim
