// Trace readers, one per format. Each returns the jobs in file order with ids
// 0..n-1 and fills the read report; the format's columns are documented in
// docs/trace-formats.md.
#pragma once

#include <string>

#include "berth/sim/trace.h"

namespace berth::sim {

// Alibaba openb pod list (cluster-trace-gpu-v2023): one single-task job per pod.
StatusOr<Trace> ReadOpenbPods(const std::string& path, const ReadOptions& opts);

// Reads `path` in the named format: openb, philly, gavel, tiresias, native.
StatusOr<Trace> ReadTrace(const std::string& path, const std::string& format, const ReadOptions& opts);

// Guesses a format from a file name ("openb_pod_list_*.csv" -> openb, ...), or "".
std::string GuessTraceFormat(const std::string& path);

}  // namespace berth::sim
