// Co-location set-up for the services simulation (service_sim.h): the openb
// qos mapping, the trace window, and the profile and scheduler options of each
// ColocationMode.
//
//   std::vector<job::JobSpec> jobs = trace.jobs;
//   if (trace.format == "openb") MapOpenbQos(jobs);
//   jobs = WindowJobs(jobs, from, to);           // rebased to `from`
//   BERTH_RETURN_IF_ERROR(ApplyColocation(settings, mode, cluster, profile, options));
#pragma once

#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/framework/registry.h"
#include "berth/scheduler/scheduler.h"
#include "berth/sim/service_sim.h"

namespace berth::sim {

// openb pods by qos: LS and Guaranteed -> a one-replica latency-critical
// service (kind service, replicas = min = max = 1) with the pod's shape and
// run (duration = its life); BE -> best-effort batch (no checkpoints); the
// rest (Burstable) stay batch.
void MapOpenbQos(std::vector<job::JobSpec>& jobs);

// The jobs submitted in [from, to) and those submitted before `from` still
// running at `from` (submitted at `from` with what is left of their
// duration), rebased so that `from` is 0. to < 0: no end.
std::vector<job::JobSpec> WindowJobs(const std::vector<job::JobSpec>& jobs, TimeUs from, TimeUs to);

// The profile and scheduler options of a colocation mode: the colocation
// filter with the reservation (every mode but none), the overcommit ratios
// and the yield deadlines (colocate), no preemption (unbounded). Errors name
// the setting.
Status ApplyColocation(const ColocationSettings& s, ColocationMode mode, const cluster::Cluster& cluster,
                       framework::Profile& profile, scheduler::SchedulerOptions& options);

// GPUs of the first `reserved_nodes` nodes.
int64_t ReservedGpus(const ColocationSettings& s, const cluster::Cluster& cluster);

}  // namespace berth::sim
