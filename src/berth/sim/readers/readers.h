// Trace readers, one per format. Each returns the jobs in file order with ids
// 0..n-1 and fills the read report; the format's columns are documented in
// docs/trace-formats.md. Every reader refuses a bad line with an error naming
// file and line, or skips and counts it under ReadOptions::skip_bad_lines.
#pragma once

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "berth/sim/trace.h"

namespace berth::sim {

// Alibaba openb pod list (cluster-trace-gpu-v2023): one single-task job per pod.
StatusOr<Trace> ReadOpenbPods(const std::string& path, const ReadOptions& opts);

// Philly per-job CSV (Pollux/Sia philly.csv): tenant = VC, large jobs as gangs
// of 8-GPU tasks. The only reader that applies ReadOptions' window and tenant
// filters; Trace::time_origin is the date-time of submit time 0.
StatusOr<Trace> ReadPhilly(const std::string& path, const ReadOptions& opts);

// Gavel .trace files (10-field physical_cluster or 7-field msr layout): gangs
// of single-GPU tasks with job_class and work_steps.
StatusOr<Trace> ReadGavel(const std::string& path, const ReadOptions& opts);

// Tiresias simulator job CSV (job_id,num_gpu,submit_time,iterations,...).
StatusOr<Trace> ReadTiresias(const std::string& path, const ReadOptions& opts);

// Pollux's workload CSVs (name,time,application,num_replicas,batch_size):
// elastic single-GPU-task jobs whose runtime follows the goodput model of
// their application, read from ReadOptions::apps_dir (default: the folder
// `apps` beside the trace's folder) into Trace::goodput.
StatusOr<Trace> ReadPollux(const std::string& path, const ReadOptions& opts);

// Berth's native JSON-lines format (see native_writer.h for writing it).
StatusOr<Trace> ReadNative(const std::string& path, const ReadOptions& opts);

class NameSet;

// A native trace read one job at a time, in file order, with the checks and
// ids of ReadNative (ids 0..n-1; bad lines skipped and counted under
// skip_bad_lines; stops after max_jobs). Workflow lines are collected, not
// returned. `check_names` false leaves out the duplicate-name check (a second
// read of a file already read once with it, which then holds no name table):
// the lines the first read refused as duplicates (duplicate_lines()) are
// passed to the second (SkipLines) so that both keep the same jobs.
//
//   auto r = NativeJobReader::Open("x40.jsonl", opts);
//   job::JobSpec j;
//   while (*(*r)->Next(j)) ...
class NativeJobReader {
 public:
  static StatusOr<std::unique_ptr<NativeJobReader>> Open(const std::string& path, const ReadOptions& opts,
                                                         bool check_names = true);
  ~NativeJobReader();
  // The next job into `out`: true, or false at the end of the jobs; an error
  // naming file and line for a bad line (unless skipped) or a read error.
  StatusOr<bool> Next(job::JobSpec& out);
  ReadReport& report() { return report_; }
  // Lines refused (and skipped) for a name already seen, in file order.
  const std::vector<int64_t>& duplicate_lines() const { return duplicates_; }
  // Lines to pass over unread (ascending), e.g. another read's duplicate_lines().
  void SkipLines(std::vector<int64_t> lines) { skip_ = std::move(lines); }
  std::vector<workload::WorkflowSpec>& workflows() { return workflows_; }

 private:
  NativeJobReader(std::string path, ReadOptions opts, bool check_names);

  std::string path_;
  ReadOptions opts_;
  bool check_names_;
  std::ifstream in_;
  std::unique_ptr<NameSet> names_;
  int64_t line_no_ = 0;
  int64_t jobs_ = 0;
  ReadReport report_;
  std::vector<workload::WorkflowSpec> workflows_;
  std::vector<int64_t> duplicates_;
  std::vector<int64_t> skip_;
  size_t next_skip_ = 0;
};

// Reads `path` in the named format: openb, philly, gavel, tiresias, pollux, native
// ("" = guess from the file name). Window and tenant filters are refused for
// formats that cannot apply them.
StatusOr<Trace> ReadTrace(const std::string& path, const std::string& format, const ReadOptions& opts);

// Guesses a format from a file name ("openb_pod_list_*.csv" -> openb, ...), or "".
std::string GuessTraceFormat(const std::string& path);

}  // namespace berth::sim
