// Gavel's round-based simulation on Berth's scheduling core.
//
// Time advances in rounds (360 s). Each round:
//   1. jobs that arrived by the round's start join the active set;
//   2. when the set changed (or the policy needs progress), the allocation
//      policy (hetero::AllocationPolicy, e.g. gavel-las: a GLPK linear
//      program) recomputes x[j][t], the share of time job j should spend on
//      type t;
//   3. the mechanism picks the round's jobs greedily: type by type (fastest
//      first), jobs by deficit (time owed by the shares so far minus time
//      received on that type), as many as the type's GPUs hold; time-sliced
//      policies then fill leftover GPUs with any job that can run there;
//   4. the Scheduler places the round's jobs on nodes and GPUs: jobs leaving
//      or changing type are preempted (Scheduler::Preempt), the newly chosen
//      ones admitted by a per-round gate plugin (admit: chosen this round;
//      filter: nodes of the chosen type) and placed by Scheduler::Schedule
//      with best fit, which packs a gang onto one node when it can;
//   5. each running job advances by its throughput on that type, consolidated
//      (all tasks on one node) or not, for the round; a job that completes
//      mid-round ends at its exact completion time (Scheduler::Finish), its
//      GPUs idle until the next round, as in Gavel's simulator.
// A job that changes type pays no cost (Gavel's simple model).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "berth/cluster/cluster.h"
#include "berth/common/status.h"
#include "berth/hetero/normalize.h"
#include "berth/hetero/throughput.h"
#include "berth/sim/gavel/workload.h"
#include "berth/sim/result.h"

namespace berth::sim::gavel {

struct RoundOptions {
  double round_s = 360.0;
  // Jobs whose id is in [measure_begin, measure_end) make the JCT figures;
  // the run stops once they have all finished. -1: every job, run to the end.
  int64_t measure_begin = -1;
  int64_t measure_end = -1;
  uint64_t seed = 42;
  bool aggregate_lp = true;
  bool check_indexes = false;
  // Safety bound on simulated time (seconds); the run reports unfinished jobs past it.
  double max_time_s = 400.0 * 24 * 3600;
};

// Runs one policy ("las", "gavel-las", "fifo", ...; see
// hetero/allocation_policy.h) over the jobs on the cluster. The cluster's GPU
// types must be in the model's catalog. Result: mode "gavel"; jct_s over the
// measured window; makespan_s = last completion; utilization = busy
// GPU-time / (GPUs x makespan).
StatusOr<PolicyResult> RunGavelRounds(const cluster::Cluster& cluster, std::span<const GavelJob> jobs,
                                      const hetero::ThroughputModel& model, const hetero::Normalizer& normalizer,
                                      const std::string& policy, const RoundOptions& options);

}  // namespace berth::sim::gavel
