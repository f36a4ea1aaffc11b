// The class score cache chooses what a full scan chooses.
//
// Property: on random clusters (mixed GPU types and node sizes, CPU-only and
// down nodes, with and without a custom tie-break rank) under a random stream
// of whole-GPU, shared-GPU, CPU-only, gang and large-group jobs with
// departures, a scheduler keeping node-local scores per task class and one
// with SchedulerOptions::full_scan make the same decisions (equal decision
// logs) for fgd, berth-frag, gpuclustering and random (a uniform draw from
// the cache's feasible nodes), including the verdicts of tasks that fit
// nowhere (which the cache gives without a scan); and for services, whose
// spread filter passes every node for jobs that are not limited replicas.
#include "berth/scheduler/class_score_cache.h"

#include <gtest/gtest.h>

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
  const int nodes = 6 + static_cast<int>(rng.Uniform(60));
  const bool one_type = rng.Uniform(3) == 0;
  const bool uniform = rng.Uniform(2) == 0;  // equal nodes make ties
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

// Few distinct shapes (so classes recur) with a tail of rare ones (so slots
// are evicted and rebuilt).
job::JobSpec RandomJob(Rng& rng, int64_t id) {
  static const int kGpus[] = {1, 1, 1, 2, 4, 8};
  static const char* kTypes[] = {"", "", "", "", "H100", "A100", "H100|A100", "T4|V100"};
  job::JobSpec j;
  j.id = JobId(id);
  j.name = "j" + std::to_string(id);
  j.duration = static_cast<TimeUs>(1 + rng.Uniform(100));
  job::TaskGroup g;
  const uint64_t kind = rng.Uniform(20);
  if (kind < 9) {
    g.gpus = kGpus[rng.Uniform(6)];
  } else if (kind < 14) {
    g.gpus = 1;
    g.milli_per_gpu = static_cast<MilliGpu>(250 * (1 + rng.Uniform(3)));
  } else if (kind < 16) {
    g.gpus = 0;
  } else if (kind < 18) {
    g.gpus = kGpus[rng.Uniform(6)];
    g.count = 2 + static_cast<int32_t>(rng.Uniform(3));
  } else {
    g.gpus = static_cast<int32_t>(rng.Uniform(2));
    g.count = 16 + static_cast<int32_t>(rng.Uniform(40));
    if (rng.Uniform(2)) g.min_count = 1 + static_cast<int32_t>(rng.Uniform(g.count));
  }
  if (rng.Uniform(4) == 0) g.gpu_type_spec = kTypes[rng.Uniform(8)];
  const bool rare = rng.Uniform(5) == 0;
  g.cpu_milli = static_cast<MilliCpu>((rare ? rng.Uniform(40) : 4 * rng.Uniform(3)) * 1000);
  g.memory_mib = static_cast<MiB>((rare ? rng.Uniform(128) : 32) * 1024);
  j.groups.push_back(std::move(g));
  return j;
}

lockstep::LockstepResult RunBoth(const std::string& policy, uint64_t seed, int steps) {
  return lockstep::RunLockstep(policy, seed, steps, RandomCluster, RandomJob, {11, 19, 20}, /*workload_jobs=*/300);
}

TEST(ClassScoreCache, SameChoiceAsFullScanForEveryNodeLocalScore) {
  // random draws from the cache's count of feasible nodes the scan's draw.
  for (const char* policy : {"fgd", "berth-frag", "gpuclustering", "random"}) {
    int64_t settled = 0;
    for (uint64_t seed = 1; seed <= 24; ++seed) {
      const lockstep::LockstepResult r = RunBoth(policy, seed, 300);
      EXPECT_EQ(r.scan.class_cache, 0) << policy;
      // Every placement, and every verdict of a task that fits nowhere, comes
      // from the cache: the fast scheduler never scans.
      EXPECT_EQ(r.fast.full_scan, 0) << policy << " seed " << seed;
      EXPECT_EQ(r.fast.index_search + r.fast.group_cache, 0) << policy;
      settled += r.fast.class_cache;
    }
    // The property is not vacuous.
    EXPECT_GT(settled, 3000) << policy;
  }
}

// Jobs of the random stream, and one in four a replica of one of three
// services that limit their replicas per node or per leaf.
job::JobSpec RandomJobOrReplica(Rng& rng, int64_t id) {
  job::JobSpec j = RandomJob(rng, id);
  if (rng.Uniform(4) != 0) return j;
  job::TaskGroup g;
  g.gpus = 1;
  g.cpu_milli = 4000;
  g.memory_mib = 32 * 1024;
  j.groups = {g};
  job::ServiceSpec svc;
  const uint64_t which = rng.Uniform(3);
  svc.max_per_node = which == 0 ? 1 : 0;
  svc.max_per_leaf = which == 1 ? 3 : 0;
  if (which == 2) svc.max_per_node = 2;
  j.service = svc;
  j.replica_of = JobId(1'000'000 + static_cast<int64_t>(which));
  return j;
}

TEST(ClassScoreCache, SameChoiceAsFullScanWithFiltersThatPassEveryNode) {
  // services: berth-frag with the spread filter, which passes every node for
  // a job that is not a replica (the cache decides it) and not for a replica
  // with a limit (the scan decides it).
  int64_t settled = 0, scanned = 0;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    const lockstep::LockstepResult r = lockstep::RunLockstep("services", seed, 300, RandomCluster,
                                                             RandomJobOrReplica, {11, 19, 20}, 300);
    EXPECT_EQ(r.scan.class_cache, 0);
    settled += r.fast.class_cache;
    scanned += r.fast.full_scan;
  }
  EXPECT_GT(settled, 1500);
  EXPECT_GT(scanned, 100);
}

TEST(ClassScoreCache, KeepsScoresAcrossJobsOfTheSameClass) {
  Registries reg;
  auto c = cluster::ParseClusterSpec("64x8:H100");
  ASSERT_TRUE(c.ok());
  ManualClock clock(0);
  std::vector<job::JobSpec> workload;
  for (int i = 0; i < 4; ++i) {
    job::JobSpec j;
    j.name = "w" + std::to_string(i);
    job::TaskGroup g;
    g.gpus = 1 + i % 2;
    g.cpu_milli = 4000;
    j.groups.push_back(g);
    workload.push_back(j);
  }
  for (const char* policy : {"fgd", "berth-frag", "gpuclustering", "random", "services"}) {
    auto fw = framework::Framework::Create(*reg.policies.Find(policy), reg.plugins, {&*c, workload});
    ASSERT_TRUE(fw.ok()) << policy << ": " << fw.status().ToString();
    Scheduler s(*c, std::move(fw).value(), {}, clock);
    for (int i = 0; i < 200; ++i) {
      job::JobSpec j = workload[i % 2];
      j.id = JobId(i + 1);
      ASSERT_TRUE(s.Submit(j).ok());
      ASSERT_EQ(s.Schedule().size(), 1u) << policy << " job " << i;
    }
    EXPECT_EQ(s.placement_counts().class_cache, 200) << policy;
    EXPECT_EQ(s.placement_counts().full_scan, 0) << policy;
  }
}

TEST(ClassScoreCache, OtherProfilesDoNotUseIt) {
  Registries reg;
  auto c = cluster::ParseClusterSpec("4x8:H100");
  ASSERT_TRUE(c.ok());
  ManualClock clock(0);
  // Bounded scores search the indexes; binpack has its own candidates.
  for (const char* policy : {"bestfit", "binpack"}) {
    auto fw = framework::Framework::Create(*reg.policies.Find(policy), reg.plugins);
    ASSERT_TRUE(fw.ok());
    Scheduler s(*c, std::move(fw).value(), {}, clock);
    job::JobSpec j;
    j.id = JobId(1);
    job::TaskGroup g;
    g.gpus = 1;
    j.groups.push_back(g);
    ASSERT_TRUE(s.Submit(j).ok());
    EXPECT_EQ(s.Schedule().size(), 1u) << policy;
    EXPECT_EQ(s.placement_counts().class_cache, 0) << policy;
  }
}

}  // namespace
}  // namespace berth::scheduler
