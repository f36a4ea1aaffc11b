// Trace readers, one per format. Each returns the jobs in file order with ids
// 0..n-1 and fills the read report; the format's columns are documented in
// docs/trace-formats.md. Every reader refuses a bad line with an error naming
// file and line, or skips and counts it under ReadOptions::skip_bad_lines.
#pragma once

#include <string>

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

// Reads `path` in the named format: openb, philly, gavel, tiresias, pollux, native
// ("" = guess from the file name). Window and tenant filters are refused for
// formats that cannot apply them.
StatusOr<Trace> ReadTrace(const std::string& path, const std::string& format, const ReadOptions& opts);

// Guesses a format from a file name ("openb_pod_list_*.csv" -> openb, ...), or "".
std::string GuessTraceFormat(const std::string& path);

}  // namespace berth::sim
