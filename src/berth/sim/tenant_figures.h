// Per-tenant figures of a replay, read from the schedulers' job records and
// ledgers after the run (definitions in result.h).
//
//   FillTenantFigures({cluster, JobTable::Of(trace.jobs), ids, route, schedulers, start, end}, result);
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/scheduler/scheduler.h"
#include "berth/sim/result.h"
#include "berth/sim/trace.h"
#include "berth/sim/trace_stream.h"

namespace berth::sim {

// What the figures read of a job's record once the job has ended. The replay
// keeps this (80 bytes) and lets the scheduler drop the record itself
// (Scheduler::Forget), so a finished job costs this instead of its spec,
// verdict and placements.
struct EndedJob {
  bool kept = false;  // set: the record was dropped, these are its figures
  uint8_t state = 0;  // job::JobState
  uint8_t verdict_code = 0;  // framework::VerdictCode of the last verdict
  bool waited_for_budget = false;
  int32_t queue = -1;
  int32_t preemptions = 0;
  int32_t restarts = 0;
  int32_t best_effort_starts = 0;
  int32_t over_budget_starts = 0;
  int32_t best_effort_evictions = 0;
  TimeUs first_start_time = -1;
  TimeUs finish_time = -1;
  double attained_gpu_seconds = 0;
  double attained_ref_seconds = 0;
  double lost_gpu_seconds = 0;

  static EndedJob Of(const scheduler::JobRecord& rec);
  // Writes these figures into `rec` (its other fields as a record of a job that ended has them).
  void Into(scheduler::JobRecord& rec) const;
};

struct ReplayRecords {
  const cluster::Cluster& cluster;
  const JobTable& jobs;                                  // per trace job: submit time, duration, GPUs, tenant
  std::span<const JobId> ids;                            // per trace job: its id in the schedulers
  std::span<const int32_t> route;                        // per trace job: its scheduler, -1 when not submitted
  std::span<const scheduler::Scheduler* const> schedulers;
  TimeUs start = 0;  // first submission
  TimeUs end = 0;    // end of the run
  const tenancy::SpeedModel* speeds = nullptr;  // reference-GPU figures (null: none)
  // Per trace job: the record to read (the scheduler's, or one rebuilt from an
  // EndedJob), or null. Unset: schedulers[route[i]]->Find(ids[i]).
  std::function<const scheduler::JobRecord*(size_t)> find;

  const scheduler::JobRecord* Record(size_t i) const {
    return find ? find(i) : schedulers[route[i]]->Find(ids[i]);
  }
};

// Fills result.tenants (by tenant name).
void FillTenantFigures(const ReplayRecords& in, PolicyResult& result);
// Fills result.budgets (queues with a budget, by name; summed over partitions).
void FillBudgetFigures(const ReplayRecords& in, PolicyResult& result);

}  // namespace berth::sim
