// The group score cache chooses what a full scan chooses.
//
// Property: on random clusters (mixed GPU types, CPU-only and down nodes, with
// and without a custom tie-break rank) under a random stream of large groups
// of identical tasks (CPU-only, whole GPUs, shares, elastic minimums) with
// departures, a scheduler using the cache and one with
// SchedulerOptions::full_scan make the same decisions (equal decision logs).
#include "berth/scheduler/group_score_cache.h"

#include <gtest/gtest.h>

#include <numeric>

#include "berth/cluster/cluster.h"
#include "berth/cluster/loaders.h"
#include "berth/common/clock.h"
#include "berth/common/rng.h"
#include "berth/framework/registry.h"
#include "berth/plugins/builtin.h"
#include "berth/scheduler/lockstep_test_util.h"
#include "berth/scheduler/scheduler.h"

namespace berth::scheduler {
namespace {

using lockstep::Registries;

cluster::Cluster RandomCluster(Rng& rng) {
  static const std::pair<const char*, int> kShapes[] = {{"H100", 8}, {"A100", 4}, {"T4", 2}, {"", 0}};
  cluster::ClusterBuilder b;
  const int nodes = 4 + static_cast<int>(rng.Uniform(60));
  const bool uniform = rng.Uniform(2) == 0;  // equal nodes make ties
  for (int i = 0; i < nodes; ++i) {
    const auto& [type, gpus] = kShapes[rng.Uniform(4)];
    cluster::NodeSpec n;
    n.name = "n" + std::to_string(i);
    n.cpu_milli = uniform ? 64000 : (16 + static_cast<int64_t>(rng.Uniform(113))) * 1000;
    n.memory_mib = uniform ? 1 << 20 : (64 + static_cast<int64_t>(rng.Uniform(960))) * 1024;
    n.gpu_count = gpus;
    n.gpu_type = type;
    n.leaf = "leaf-" + std::to_string(i / 8);
    b.AddNode(std::move(n));
  }
  auto c = std::move(b).Build();
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

job::JobSpec RandomGang(Rng& rng, int64_t id) {
  job::JobSpec j;
  j.id = JobId(id);
  j.name = "j" + std::to_string(id);
  j.duration = static_cast<TimeUs>(1 + rng.Uniform(100));
  const int groups = 1 + static_cast<int>(rng.Uniform(2));
  for (int k = 0; k < groups; ++k) {
    job::TaskGroup g;
    g.name = "g" + std::to_string(k);
    g.count = 16 + static_cast<int32_t>(rng.Uniform(60));
    switch (rng.Uniform(4)) {
      case 0: g.gpus = 0; break;
      case 1: g.gpus = 1; break;
      case 2: g.gpus = 1; g.milli_per_gpu = static_cast<MilliGpu>(100 * (1 + rng.Uniform(9))); break;
      default: g.gpus = 1 + static_cast<int32_t>(rng.Uniform(2)); break;
    }
    if (rng.Uniform(3) == 0) g.min_count = 1 + static_cast<int32_t>(rng.Uniform(g.count));
    g.cpu_milli = static_cast<MilliCpu>(rng.Uniform(8) * 1000);
    g.memory_mib = static_cast<MiB>(rng.Uniform(16) * 1024);
    j.groups.push_back(std::move(g));
  }
  return j;
}

// Runs `policy` both ways in lockstep; returns how many placements the fast path settled.
int64_t RunLockstep(const std::string& policy, uint64_t seed, int steps) {
  const lockstep::LockstepResult r = lockstep::RunLockstep(policy, seed, steps, RandomCluster, RandomGang, {5, 9, 10});
  EXPECT_EQ(r.scan.group_cache, 0) << policy;
  return r.fast.group_cache;
}

TEST(GroupScoreCache, SameChoiceAsFullScanForEveryBoundedScore) {
  for (const char* policy : {"bestfit", "firstfit", "worstfit", "dotprod", "gpupacking", "priority", "topology"}) {
    int64_t settled = 0;
    for (uint64_t seed = 1; seed <= 12; ++seed) settled += RunLockstep(policy, seed, 120);
    // The property is not vacuous: many placements came from the cache.
    EXPECT_GT(settled, 1000) << policy;
  }
}

TEST(GroupScoreCache, AppliesOnlyToProfilesItCanServe) {
  Registries reg;
  auto c = cluster::ParseClusterSpec("4x8:H100");
  ASSERT_TRUE(c.ok());
  ManualClock clock(0);
  // binpack has its own candidates; gpuclustering and random do not bound their scores.
  for (const char* policy : {"binpack", "gpuclustering", "random"}) {
    auto fw = framework::Framework::Create(*reg.policies.Find(policy), reg.plugins);
    ASSERT_TRUE(fw.ok());
    Scheduler s(*c, std::move(fw).value(), {}, clock);
    job::JobSpec j;
    j.id = JobId(1);
    job::TaskGroup g;
    g.count = 20;
    j.groups.push_back(g);
    ASSERT_TRUE(s.Submit(j).ok());
    EXPECT_EQ(s.Schedule().size(), 1u) << policy;
    EXPECT_EQ(s.placement_counts().group_cache, 0) << policy;
  }
}

TEST(GroupScoreCache, SmallGroupsUseTheIndexSearch) {
  Registries reg;
  auto c = cluster::ParseClusterSpec("4x8:H100");
  ASSERT_TRUE(c.ok());
  ManualClock clock(0);
  auto fw = framework::Framework::Create(*reg.policies.Find("bestfit"), reg.plugins);
  ASSERT_TRUE(fw.ok());
  Scheduler s(*c, std::move(fw).value(), {}, clock);
  job::JobSpec j;
  j.id = JobId(1);
  job::TaskGroup g;
  g.count = 4;
  g.gpus = 1;
  j.groups.push_back(g);
  ASSERT_TRUE(s.Submit(j).ok());
  EXPECT_EQ(s.Schedule().size(), 1u);
  EXPECT_EQ(s.placement_counts().group_cache, 0);
  EXPECT_EQ(s.placement_counts().index_search, 4);
}

}  // namespace
}  // namespace berth::scheduler
