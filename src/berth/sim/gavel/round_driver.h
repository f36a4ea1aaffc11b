// Gavel's round-based simulation on Berth's scheduling core.
//
// Time advances in rounds (360 s). Each round:
//   1. jobs that arrived by the round's start join the active set;
//   2. when the set changed (or the policy needs progress) and the mechanism
//      allows it (Gavel's: at least 1920 s since the last reset), the
//      allocation policy (hetero::AllocationPolicy, e.g. gavel-las: a GLPK
//      linear program) recomputes x[j][t], the share of time job j should
//      spend on type t;
//   3. the mechanism (mechanism.h) picks the round's jobs type by type -
//      fastest first for aware policies, a random order each round for the
//      blind ones - as many as the type's GPUs hold;
//   4. the Scheduler places the round's jobs on nodes and GPUs: jobs leaving
//      or changing type are preempted (Scheduler::Preempt), the newly chosen
//      ones admitted by a per-round gate plugin (admit: chosen this round;
//      filter: nodes of the chosen type) and placed by Scheduler::Schedule
//      with best fit, which packs a gang onto one node when it can;
//   5. each running job advances by its throughput on that type (see
//      Consolidation) for the round; a job that completes mid-round ends at
//      its exact completion time (Scheduler::Finish), its GPUs idle until the
//      next round, which starts when the round's last job ends (360 s, or
//      earlier if all of them completed), as in Gavel's simulator.
// A job that changes type pays no cost (Gavel's simple model).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "berth/cluster/cluster.h"
#include "berth/common/status.h"
#include "berth/hetero/normalize.h"
#include "berth/hetero/throughput.h"
#include "berth/sim/gavel/mechanism.h"
#include "berth/sim/gavel/workload.h"
#include "berth/sim/result.h"

namespace berth::sim::gavel {

// How a multi-GPU job's speed depends on where its tasks land.
//   kGavel: always the consolidated (one-server) throughput. Gavel's
//     simulator reads only the consolidated entry of its table; its sweeps
//     model one GPU per server and never consult the *_unconsolidated values.
//   kPlacement: consolidated when every task is on one node, else the
//     unconsolidated throughput (measured, or the class's spread penalty).
enum class Consolidation : int8_t { kGavel, kPlacement };

struct RoundOptions {
  double round_s = 360.0;
  Consolidation consolidation = Consolidation::kGavel;
  Mechanism mechanism = Mechanism::kGavel;
  double reset_interval_s = 1920;  // kGavel: minimum time between allocation resets
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
// hetero/allocation_policy.h) over the jobs of `source`, pulled as simulated
// time reaches their arrival. The cluster's GPU types must be in the model's
// catalog. Result: mode "gavel"; jobs_total = jobs that arrived; jct_s over
// the measured window; makespan_s = last completion; utilization = busy
// GPU-time / (GPUs x makespan).
StatusOr<PolicyResult> RunGavelRounds(const cluster::Cluster& cluster, JobSource& source,
                                      const hetero::ThroughputModel& model, const hetero::Normalizer& normalizer,
                                      const std::string& policy, const RoundOptions& options);

// The same over a fixed list of jobs.
inline StatusOr<PolicyResult> RunGavelRounds(const cluster::Cluster& cluster, std::span<const GavelJob> jobs,
                                             const hetero::ThroughputModel& model,
                                             const hetero::Normalizer& normalizer, const std::string& policy,
                                             const RoundOptions& options) {
  VectorSource source(jobs);
  return RunGavelRounds(cluster, source, model, normalizer, policy, options);
}

}  // namespace berth::sim::gavel
