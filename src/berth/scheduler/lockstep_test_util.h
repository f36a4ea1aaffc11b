// Test support: one policy run two ways in lockstep, a scheduler on its fast
// paths (index search, group score cache) and one with
// SchedulerOptions::full_scan, over a random stream of submissions,
// departures and node flips. The decision logs must stay equal; the caller
// reads how many placements each fast path settled.
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
// reports a failure and returns zero counts.
inline LockstepResult RunLockstep(const std::string& policy, uint64_t seed, int steps,
                                  const std::function<cluster::Cluster(Rng&)>& make_cluster,
                                  const std::function<job::JobSpec(Rng&, int64_t)>& make_job, LockstepMix mix) {
  Registries reg;
  Rng rng(seed);
  const cluster::Cluster cluster = make_cluster(rng);
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
  auto fast_fw = framework::Framework::Create(*profile, reg.plugins);
  auto scan_fw = framework::Framework::Create(*profile, reg.plugins);
  EXPECT_TRUE(fast_fw.ok() && scan_fw.ok());
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
