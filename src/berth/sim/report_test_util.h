// The JSON report of a `berth simulate` run without its timings (wall time,
// pass times), for tests that compare two ways of running the same thing.
#pragma once

#include <string>

#include "berth/sim/report/json_report.h"
#include "berth/sim/simulate.h"

namespace berth::sim::testing {

inline StatusOr<std::string> ReportWithoutTimings(const SimulateOptions& o) {
  BERTH_ASSIGN_OR_RETURN(SimulateOutput out, RunSimulation(o));
  for (auto& r : out.results) {
    r.wall_seconds = 0;
    r.pass_mean_ms = 0;
    r.pass_max_ms = 0;
  }
  return ResultsToJson(out);
}

}  // namespace berth::sim::testing
