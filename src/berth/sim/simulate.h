// `berth simulate` as a library call: options in, one result per policy out.
// The command-line front end only parses flags into SimulateOptions.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "berth/common/status.h"
#include "berth/sim/result.h"

namespace berth::sim {

struct SimulateOptions {
  std::string cluster;        // file (.yaml, .csv) or compact spec
  std::string trace;          // path
  std::string trace_format;   // openb|philly|gavel|tiresias|native ("" = guess)
  std::string mode;           // fgd|replay ("" = fgd for openb, else replay)
  double load = 1.3;          // fgd mode
  uint64_t seed = 42;
  std::string arrival_order;  // fgd mode: data/fgd-reference-run pod order
  std::string node_rank;      // fgd mode: data/fgd-reference-run node ranking
  std::vector<std::string> policies;
  bool skip_bad_lines = false;
  int64_t max_jobs = -1;
  bool check_indexes = false;
  bool record_placements = false;
  // Called with (done, total) as the run advances, for a progress bar.
  std::function<void(int64_t, int64_t)> progress;

  Status Validate() const;
};

struct SimulateOutput {
  std::vector<PolicyResult> results;
  std::string cluster_summary;
  std::string trace_summary;
  std::string trace_skips;  // the read report's skipped lines by reason, with the first errors ("" if none)
  std::string trace_name;
};

StatusOr<SimulateOutput> RunSimulation(const SimulateOptions& options);

}  // namespace berth::sim
