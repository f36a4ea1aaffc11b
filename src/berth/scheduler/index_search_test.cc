// The index search chooses what a full scan chooses.
//
// Property: on random clusters (mixed GPU types and node sizes, CPU-only and
// down nodes, with and without a custom tie-break rank) under a random stream
// of whole-GPU, shared-GPU, CPU-only and gang jobs with departures, a
// scheduler searching the indexes and one with SchedulerOptions::full_scan
// make the same decision every time (equal decision logs), for every score
// plugin that bounds its scores.
#include "berth/scheduler/index_search.h"

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
  struct Shape {
    const char* type;
    int gpus;
  };
  static const Shape kShapes[] = {{"H100", 8}, {"A100", 8}, {"A100", 4}, {"T4", 2}, {"V100", 1}, {"", 0}};
  cluster::ClusterBuilder b;
  const int nodes = 8 + static_cast<int>(rng.Uniform(120));
  const bool one_type = rng.Uniform(3) == 0;
  // Equal nodes make ties, where rank mistakes show.
  const bool uniform = rng.Uniform(2) == 0;
  for (int i = 0; i < nodes; ++i) {
    const Shape& s = one_type ? kShapes[0] : kShapes[rng.Uniform(rng.Uniform(5) == 0 ? 6 : 5)];
    cluster::NodeSpec n;
    n.name = "n" + std::to_string(i);
    n.cpu_milli = uniform ? 96000 : (16 + static_cast<int64_t>(rng.Uniform(113))) * 1000;
    n.memory_mib = uniform ? 1 << 20 : (64 + static_cast<int64_t>(rng.Uniform(960))) * 1024;
    n.gpu_count = s.gpus;
    n.gpu_type = s.type;
    n.leaf = "leaf-" + std::to_string(i / 16);
    b.AddNode(std::move(n));
  }
  auto c = std::move(b).Build();
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

job::JobSpec RandomJob(Rng& rng, int64_t id, bool share_heavy) {
  static const int kGpus[] = {1, 1, 1, 2, 4, 8};
  static const char* kTypes[] = {"", "", "", "", "H100", "A100", "H100|A100", "T4|V100", "B200"};
  job::JobSpec j;
  j.id = JobId(id);
  j.name = "j" + std::to_string(id);
  j.priority = static_cast<int32_t>(rng.Uniform(3));
  j.duration = static_cast<TimeUs>(1 + rng.Uniform(100));
  job::TaskGroup g;
  const uint64_t kind = share_heavy && rng.Uniform(4) != 0 ? 9 : rng.Uniform(20);
  if (kind < 9) {
    g.gpus = kGpus[rng.Uniform(6)];
  } else if (kind < 15) {
    g.gpus = 1;
    g.milli_per_gpu = rng.Uniform(2) ? static_cast<MilliGpu>(1 + rng.Uniform(999))
                                     : static_cast<MilliGpu>(50 * (1 + rng.Uniform(19)));
  } else if (kind < 17) {
    g.gpus = 0;
  } else {
    g.gpus = kGpus[rng.Uniform(6)];
    g.count = 2 + static_cast<int32_t>(rng.Uniform(3));
  }
  g.gpu_type_spec = kTypes[rng.Uniform(9)];
  g.cpu_milli = static_cast<MilliCpu>(rng.Uniform(rng.Uniform(4) == 0 ? 64 : 12) * 1000);
  g.memory_mib = static_cast<MiB>(rng.Uniform(128) * 1024);
  j.groups.push_back(std::move(g));
  return j;
}

// Runs `policy` both ways in lockstep; returns how many placements the fast path settled.
int64_t RunLockstep(const std::string& policy, uint64_t seed, int steps) {
  auto job = [share_heavy = seed % 3 == 0](Rng& rng, int64_t id) { return RandomJob(rng, id, share_heavy); };
  const lockstep::LockstepResult r = lockstep::RunLockstep(policy, seed, steps, RandomCluster, job, {11, 19, 20});
  EXPECT_EQ(r.scan.index_search, 0) << policy;
  return r.fast.index_search;
}

TEST(IndexSearch, SameChoiceAsFullScanForEveryBoundedScore) {
  for (const char* policy : {"bestfit", "firstfit", "worstfit", "dotprod", "gpupacking", "fifo", "priority", "topology", "srtf"}) {
    int64_t settled = 0;
    for (uint64_t seed = 1; seed <= 30; ++seed) settled += RunLockstep(policy, seed, 300);
    // The property is not vacuous: most placements came from the indexes.
    EXPECT_GT(settled, 1000) << policy;
  }
}

TEST(IndexSearch, AppliesOnlyToProfilesItCanServe) {
  Registries reg;
  auto c = cluster::ParseClusterSpec("4x8:H100");
  ASSERT_TRUE(c.ok());
  ManualClock clock(0);
  // binpack has its own candidates; gpuclustering does not bound its scores.
  for (const char* policy : {"binpack", "gpuclustering"}) {
    auto fw = framework::Framework::Create(*reg.policies.Find(policy), reg.plugins);
    ASSERT_TRUE(fw.ok());
    Scheduler s(*c, std::move(fw).value(), {}, clock);
    job::JobSpec j;
    j.id = JobId(1);
    job::TaskGroup g;
    g.gpus = 1;
    j.groups.push_back(g);
    ASSERT_TRUE(s.Submit(j).ok());
    EXPECT_EQ(s.Schedule().size(), 1u);
    EXPECT_EQ(s.placement_counts().index_search, 0) << policy;
  }
}

}  // namespace
}  // namespace berth::scheduler
