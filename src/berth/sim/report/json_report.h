// The JSON report: one object per policy (keys documented in
// docs/simulate-output.md; `policy`, `seed`, `gpu_allocation_ratio`,
// `jobs_total`, `jobs_placed`, `jct_mean_s`, `queue_delay_mean_s`,
// `decision_log_hash` are a contract).
#pragma once

#include <string>

#include "berth/common/status.h"
#include "berth/sim/simulate.h"

namespace berth::sim {

std::string ResultsToJson(const SimulateOutput& out);
Status WriteJsonReport(const SimulateOutput& out, const std::string& path);

}  // namespace berth::sim
