// The results tables of the HTML report: one row per policy (colour swatch,
// name, figures), columns grouped under a header row, the best value per
// column marked, "—" where a policy has no figure. Columns without data in
// the run are left out; durations in a group share one unit (s, min, h, d).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "berth/sim/result.h"

namespace berth::sim {

// Allocation, utilization (replay), job counts, fragmentation (when
// computed), wall time and decision-log hash.
std::string PlacementTable(const std::vector<PolicyResult>& rs);
// JCT and queueing-delay percentiles and makespan; "" when none was measured.
std::string TimingTable(const std::vector<PolicyResult>& rs);

// Replay runs with two tenants or more: per tenant, one row per policy (jobs,
// JCT and queueing delay mean/p99, GPU share received and guaranteed,
// finish-time fairness, preemptions, GPU-hours lost); "" otherwise.
std::string TenantTable(const std::vector<PolicyResult>& rs);

// A duration in the unit that suits it: 42 -> "42.0 s", 5400 -> "90.0 min",
// 3.5 days -> "3.50 d"; 0 -> "0 s".
std::string FormatSeconds(double seconds);

// 1234567 -> "1,234,567".
std::string Thousands(int64_t v);

}  // namespace berth::sim
