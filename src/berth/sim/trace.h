// Traces: a list of jobs read from a file, with a report of what was read and
// what was skipped. Every reader validates each line; a bad line either stops
// the read (an error naming file and line) or is skipped and counted, as the
// caller chooses. Errors in the file as a whole (cannot open, empty, no
// header, unknown or missing column, no job left) always stop the read.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "berth/common/status.h"
#include "berth/elastic/goodput.h"
#include "berth/job/job.h"
#include "berth/workload/workflow.h"

namespace berth::sim {

struct ReadOptions {
  bool skip_bad_lines = false;  // false: the first bad line is an error
  int64_t max_jobs = -1;        // stop after this many jobs (-1: all)
  // native: every line through the JSON document parser, none read directly
  // (readers/native_line.h); the same jobs and errors, slower (the oracle).
  bool full_json = false;

  // Filters, for formats with wall-clock submission times and tenants (philly).
  // Defaults keep every job; a job left out is counted in ReadReport::filtered.
  // Times are "YYYY-MM-DD" or "YYYY-MM-DD HH:MM:SS" in the trace's own clock.
  std::string window_from;           // keep jobs submitted at or after this time
  std::string window_to;             // keep jobs submitted at or before this time; a bare date includes its whole day
  std::vector<std::string> tenants;  // keep only jobs of these tenants (Philly VCs); empty: all

  // pollux: the folder of application profiles ("" = <trace folder>/../apps).
  std::string apps_dir;

  bool has_filters() const { return !window_from.empty() || !window_to.empty() || !tenants.empty(); }
};

struct ReadReport {
  int64_t lines = 0;     // data lines seen
  int64_t jobs = 0;      // jobs produced
  int64_t skipped = 0;   // bad lines skipped
  int64_t filtered = 0;  // good lines left out by a window or tenant filter
  std::map<std::string, int64_t> skipped_by_reason;  // reason -> count
  std::vector<std::string> examples;  // the first few skipped lines' errors ("file:line: why")

  // Records a skipped line; `reason` is a short category, `error` the full message.
  void Skip(const std::string& reason, const std::string& error);
  // One line: "N jobs from M lines[; F left out by filters][; skipped K bad line(s): reason n; ...]".
  std::string Summary() const;
  // "" when nothing was skipped; else the skip counts by reason and the first
  // few errors, one per line, for the user to fix the file.
  std::string SkipDetails() const;
};

struct Trace {
  std::vector<job::JobSpec> jobs;
  // Workflows (native traces only: a line with `stages`; docs/workflows.md):
  // replay submits their stages as jobs when their dependencies end.
  std::vector<workload::WorkflowSpec> workflows;
  ReadReport report;
  std::string format;
  // The wall-clock time that submit time 0 stands for, when the format has
  // one (philly: "2017-09-04 10:30:41"); "" otherwise.
  std::string time_origin;
  // Goodput models of the trace's applications (pollux): jobs whose job_class
  // names one run by progress (their duration is -1), not by duration.
  std::shared_ptr<const elastic::GoodputCatalog> goodput;
};

// Handles one bad line under `opts`: returns the error when not skipping, OK
// (after counting it) when skipping.
Status HandleBadLine(const ReadOptions& opts, ReadReport& report, const Status& error, const std::string& reason);

}  // namespace berth::sim
