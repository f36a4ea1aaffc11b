// The FGD experiment protocol (docs: ../shared/docs/FGD-PROTOCOL.md): the pod
// list is shuffled and resampled to a target load, every node gets a random
// tie-break rank, and pods are placed one at a time with no departures; a pod
// that fits nowhere is dropped. Runs on the same Scheduler as everything else.
//
//   FgdOptions o;  o.load = 1.3;  o.seed = 42;
//   StatusOr<FgdInput> in = BuildFgdInput(cluster, trace, o);
//   StatusOr<PolicyResult> r = RunFgd(cluster, *in, profile, registry, o);
#pragma once

#include <string>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/framework/registry.h"
#include "berth/sim/result.h"
#include "berth/sim/trace.h"

namespace berth::sim {

struct FgdOptions {
  double load = 1.3;
  uint64_t seed = 42;
  std::string arrival_order_file;  // replaces shuffle + resampling (index,pod)
  std::string node_rank_file;      // replaces the seeded ranking (rank,node)
  bool record_placements = false;
  bool check_indexes = false;
  bool full_scan = false;  // SchedulerOptions::full_scan (the exactness oracle)
};

// The arrival sequence and node ranking of one experiment.
struct FgdInput {
  std::vector<job::JobSpec> arrivals;  // in order; names "<pod>" or "<pod>-tuned-<i>"
  std::vector<int32_t> node_rank;      // per node id
  const std::vector<job::JobSpec>* originals = nullptr;  // the trace as read
};

StatusOr<FgdInput> BuildFgdInput(const cluster::Cluster& cluster, const Trace& trace, const FgdOptions& opts);

StatusOr<PolicyResult> RunFgd(const cluster::Cluster& cluster, const FgdInput& input,
                              const framework::Profile& profile, const framework::PluginRegistry& registry,
                              const FgdOptions& opts);

}  // namespace berth::sim
