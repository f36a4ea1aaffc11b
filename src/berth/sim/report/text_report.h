// The plain-text summary `berth simulate` prints: the run's setup, then one
// aligned row per policy with the columns policy, seed, alloc%, placed,
// failed, never, [unfinished,] jct_mean_s, queue_mean_s, wall_s,
// decision_log_hash ("-" where a figure was not measured), then the best
// policy by allocation (and by mean JCT when measured).
#pragma once

#include <string>

#include "berth/sim/simulate.h"

namespace berth::sim {

std::string FormatTextSummary(const SimulateOutput& out);

}  // namespace berth::sim
