// A test bed for placement benchmarks: a scheduler on a large cluster, filled
// to a target share of its GPUs by a seeded stream of arrivals and departures
// of 1/2/4/8-GPU tasks, so the state is fragmented as a busy cluster is.
//
//   FillOptions o;  o.target = 0.70;
//   StatusOr<std::unique_ptr<Bed>> bed = MakeBed(cluster, profile, plugins, o);
//   bed->sched->Submit(...);  bed->sched->Schedule();
//
// Two beds made from the same cluster and options with policies that make the
// same decisions (binpack and its full-scan twin) end in the same state; the
// decision log hash says so.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/common/clock.h"
#include "berth/common/rng.h"
#include "berth/framework/registry.h"
#include "berth/scheduler/scheduler.h"

namespace berth::bench {

struct FillOptions {
  double target = 0.70;     // allocated share of all GPUs
  int64_t churn = 20'000;   // departures (each refilled) after the first fill
  uint64_t seed = 42;
  // Task mix by count: 1, 2, 4, 8 GPUs (percent).
  int mix[4] = {50, 20, 15, 15};
};

struct RunningJob {
  JobId id;
  int32_t gpus = 0;
};

struct Bed {
  ManualClock clock{0};
  std::unique_ptr<scheduler::Scheduler> sched;
  Rng rng{0};
  std::vector<RunningJob> running;  // every running job, for departures
  std::vector<JobId> singles;       // the running 1-GPU jobs after the fill
  int64_t next_id = 0;
  double fill_seconds = 0;   // time to build the fill
  std::string fill_hash;     // decision log hash after the fill
};

// One task of `gpus` whole GPUs, with CPU and memory in proportion (12 cores
// and 96 GiB per GPU, so the GPUs are what runs out).
job::JobSpec GpuJob(int64_t id, int32_t gpus);

StatusOr<std::unique_ptr<Bed>> MakeBed(const cluster::Cluster& cluster, const framework::Profile& profile,
                                       const framework::PluginRegistry& plugins, const FillOptions& options);

// One fill for many policies: made once by `binpack`, then every policy's
// scheduler adopts exactly those placements (Scheduler::Adopt), so all of
// them decide on the same state.
struct SharedFill {
  const cluster::Cluster* cluster = nullptr;
  std::vector<job::JobSpec> jobs;  // the running jobs of the fill, in start order
  std::vector<std::vector<framework::TaskPlacement>> placements;
  int64_t next_id = 0;
  std::string hash;
  double seconds = 0;
};
StatusOr<SharedFill> MakeSharedFill(const cluster::Cluster& cluster, const framework::PolicyRegistry& policies,
                                    const framework::PluginRegistry& plugins, const FillOptions& options);
// A bed for the registry's policy `policy` (as users run it) on `fill`; with
// `full_scan`, SchedulerOptions::full_scan (the exactness oracle). FGD and
// berth-frag take their typical pods from the fill's jobs.
StatusOr<std::unique_ptr<Bed>> AdoptFill(const SharedFill& fill, const std::string& policy,
                                         const framework::PolicyRegistry& policies,
                                         const framework::PluginRegistry& plugins, bool full_scan);

}  // namespace berth::bench
