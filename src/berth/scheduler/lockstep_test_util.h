// Test support: one policy run two ways in lockstep, a scheduler on its fast
// paths (index search, group and class score caches) and one with
// SchedulerOptions::full_scan, over a random stream of submissions,
// departures and node flips. The decision logs and each new job's verdict
// must stay equal; the caller reads how many placements each fast path
// settled.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/common/clock.h"
#include "berth/common/rng.h"
#include "berth/framework/registry.h"
#include "berth/plugins/builtin.h"
#include "berth/scheduler/scheduler.h"

namespace berth::scheduler::lockstep {

struct Registries {
  framework::PluginRegistry plugins;
  framework::PolicyRegistry policies;
  Registries() {
    EXPECT_TRUE(plugins::RegisterBuiltinPlugins(plugins).ok());
    EXPECT_TRUE(plugins::RegisterBuiltinPolicies(policies).ok());
  }
};

// A step draws op = rng.Uniform(out_of): op < submit submits a job, op <
// finish ends a running one, else a random node flips up/down.
struct LockstepMix {
  uint64_t submit, finish, out_of;
};

struct LockstepResult {
  Scheduler::PlacementCounts fast, scan;
};

// The cluster is drawn first from the seeded stream, then the tie-break rank
// (half the seeds), then the steps. On the first differing decision it
// reports a failure and returns zero counts. With `workload_jobs` > 0, that
// many jobs drawn by `make_job` from a stream of their own are the workload
// the plugins are built from (fgd's and berth-frag's typical pods).
inline LockstepResult RunLockstep(const std::string& policy, uint64_t seed, int steps,
                                  const std::function<cluster::Cluster(Rng&)>& make_cluster,
                                  const std::function<job::JobSpec(Rng&, int64_t)>& make_job, LockstepMix mix,
                                  int workload_jobs = 0) {
  Registries reg;
  Rng rng(seed);
  const cluster::Cluster cluster = make_cluster(rng);
  std::vector<job::JobSpec> workload;
  Rng workload_rng(seed ^ 0x9e3779b97f4a7c15ull);
  for (int i = 0; i < workload_jobs; ++i) workload.push_back(make_job(workload_rng, i));
  for (auto& j : workload) job::ResolveGpuTypes(j, cluster);
  const framework::PluginContext context{&cluster, workload};
  SchedulerOptions opts;
  opts.seed = seed;
  if (rng.Uniform(2)) {
    opts.node_rank.resize(cluster.num_nodes());
    std::iota(opts.node_rank.begin(), opts.node_rank.end(), 0);
    rng.Shuffle(opts.node_rank);
  }
  SchedulerOptions scan_opts = opts;
  scan_opts.full_scan = true;
  ManualClock clock(0);
  auto profile = reg.policies.Find(policy);
  EXPECT_TRUE(profile.ok()) << policy;
  auto fast_fw = framework::Framework::Create(*profile, reg.plugins, context);
  auto scan_fw = framework::Framework::Create(*profile, reg.plugins, context);
  EXPECT_TRUE(fast_fw.ok() && scan_fw.ok()) << policy;
  if (!fast_fw.ok() || !scan_fw.ok()) return {};
  Scheduler fast(cluster, std::move(fast_fw).value(), opts, clock);
  Scheduler scan(cluster, std::move(scan_fw).value(), scan_opts, clock);
  std::vector<JobId> running;
  for (int step = 0; step < steps; ++step) {
    clock.Advance(1);
    const uint64_t op = rng.Uniform(mix.out_of);
    if (op < mix.submit) {
      const job::JobSpec j = make_job(rng, step);
      EXPECT_TRUE(fast.Submit(j).ok());
      EXPECT_TRUE(scan.Submit(j).ok());
      std::vector<JobId> a = fast.Schedule();
      std::vector<JobId> b = scan.Schedule();
      EXPECT_EQ(a, b) << policy << " seed " << seed << " step " << step;
      // Verdicts are not in the log: compare the new job's.
      const JobRecord* ra = fast.Find(j.id);
      const JobRecord* rb = scan.Find(j.id);
      if (ra != nullptr && rb != nullptr) {
        EXPECT_EQ(ra->last_verdict.reason, rb->last_verdict.reason) << policy << " seed " << seed << " step " << step;
      }
      running.insert(running.end(), a.begin(), a.end());
    } else if (op < mix.finish) {
      if (running.empty()) continue;
      const size_t k = rng.Uniform(running.size());
      EXPECT_TRUE(fast.Finish(running[k], job::JobState::kSucceeded).ok());
      EXPECT_TRUE(scan.Finish(running[k], job::JobState::kSucceeded).ok());
      running[k] = running.back();
      running.pop_back();
    } else {
      const NodeId n(static_cast<int32_t>(rng.Uniform(cluster.num_nodes())));
      const bool up = !fast.state().up(n);
      EXPECT_TRUE(fast.SetNodeUp(n, up).ok());
      EXPECT_TRUE(scan.SetNodeUp(n, up).ok());
    }
    if (fast.log().hash() != scan.log().hash()) {
      ADD_FAILURE() << policy << " seed " << seed << ": decisions differ at step " << step;
      return {};
    }
  }
  return {fast.placement_counts(), scan.placement_counts()};
}

}  // namespace berth::scheduler::lockstep
