// Per-tenant figures of a replay, read from the schedulers' job records and
// ledgers after the run (definitions in result.h).
//
//   FillTenantFigures({cluster, trace, ids, route, schedulers, start, end}, result);
#pragma once

#include <span>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/scheduler/scheduler.h"
#include "berth/sim/result.h"
#include "berth/sim/trace.h"

namespace berth::sim {

struct ReplayRecords {
  const cluster::Cluster& cluster;
  const Trace& trace;
  std::span<const JobId> ids;                            // per trace job: its id in the schedulers
  std::span<const int32_t> route;                        // per trace job: its scheduler, -1 when not submitted
  std::span<const scheduler::Scheduler* const> schedulers;
  TimeUs start = 0;  // first submission
  TimeUs end = 0;    // end of the run
  const tenancy::SpeedModel* speeds = nullptr;  // reference-GPU figures (null: none)
};

// Fills result.tenants (by tenant name).
void FillTenantFigures(const ReplayRecords& in, PolicyResult& result);
// Fills result.budgets (queues with a budget, by name; summed over partitions).
void FillBudgetFigures(const ReplayRecords& in, PolicyResult& result);

}  // namespace berth::sim
