// The index search chooses what a full scan chooses.
//
// Property: on random clusters (mixed GPU types and node sizes, CPU-only and
// down nodes, with and without a custom tie-break rank) under a random stream
// of whole-GPU, shared-GPU, CPU-only and gang jobs with departures, a
// scheduler searching the indexes and one with SchedulerOptions::full_scan
// make the same decision every time (equal decision logs), for every score
// plugin that bounds its scores. Find kept to one GPU type and FindLowest
// give the scan's best node of that type and the scan's lowest raw score, and
// CountFitsByBuckets the number of nodes of a type that pass fit. A
// task that fits nowhere gets the scan's verdict (its reject counts per
// filter) from the indexes.
#include "berth/scheduler/index_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <vector>

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

// Runs `policy` both ways in lockstep; returns how many placements the fast
// path settled, and adds to `counted` the verdicts it counted from the indexes.
int64_t RunLockstep(const std::string& policy, uint64_t seed, int steps, int64_t& counted) {
  auto job = [share_heavy = seed % 3 == 0](Rng& rng, int64_t id) { return RandomJob(rng, id, share_heavy); };
  const lockstep::LockstepResult r = lockstep::RunLockstep(policy, seed, steps, RandomCluster, job, {11, 19, 20});
  EXPECT_EQ(r.scan.index_search, 0) << policy;
  EXPECT_EQ(r.scan.counted_from_indexes, 0) << policy;
  counted += r.fast.counted_from_indexes;
  return r.fast.index_search;
}

TEST(IndexSearch, SameChoiceAsFullScanForEveryBoundedScore) {
  for (const char* policy : {"bestfit", "firstfit", "worstfit", "dotprod", "gpupacking", "fifo", "priority", "topology", "srtf"}) {
    int64_t settled = 0, counted = 0;
    for (uint64_t seed = 1; seed <= 30; ++seed) settled += RunLockstep(policy, seed, 300, counted);
    // The property is not vacuous: most placements came from the indexes, and
    // so did the verdicts (the same reject counts) of tasks that fit nowhere.
    EXPECT_GT(settled, 1000) << policy;
    EXPECT_GT(counted, 100) << policy;
  }
}

TEST(IndexSearch, BestOfATypeAndLowestScoreAreTheScans) {
  Registries reg;
  int64_t compared = 0, by_buckets = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Rng rng(seed);
    const cluster::Cluster c = RandomCluster(rng);
    ManualClock clock(0);
    auto fw = framework::Framework::Create(*reg.policies.Find("bestfit"), reg.plugins);
    ASSERT_TRUE(fw.ok());
    Scheduler s(c, std::move(fw).value(), {}, clock);
    for (int64_t id = 0; id < 200; ++id) ASSERT_TRUE(s.Submit(RandomJob(rng, id, seed % 2 == 0)).ok());
    s.Schedule();
    // The search is built on the filled state: its widest ranges bound every node.
    auto probe_fw = framework::Framework::Create(*reg.policies.Find("bestfit"), reg.plugins);
    ASSERT_TRUE(probe_fw.ok());
    const framework::ScorePlugin& bestfit = *(*probe_fw)->score().front().first;
    const auto& filters = (*probe_fw)->filter();
    std::vector<MilliCpu> type_cpu_max(c.gpu_types().size(), 0);
    for (const auto& n : c.nodes())
      if (n.gpu_count > 0)
        type_cpu_max[n.gpu_type.value()] = std::max<MilliCpu>(type_cpu_max[n.gpu_type.value()], n.cpu_milli);
    IndexSearch search;
    search.Reset(s.state(), type_cpu_max);
    for (int q = 0; q < 30; ++q) {
      // Submitted (never scheduled) so that its GPU types are resolved. Half
      // state no memory (and a quarter no CPU), which the bucket count serves.
      job::JobSpec probe = RandomJob(rng, 1000 + q, seed % 2 == 0);
      if (q % 2 == 0) probe.groups[0].memory_mib = 0;
      if (q % 4 == 0) probe.groups[0].cpu_milli = 0;
      if (!s.Submit(std::move(probe)).ok()) continue;
      const job::JobSpec& j = s.Find(JobId(1000 + q))->spec;
      const framework::TaskRequest req = framework::TaskRequest::FromGroup(j.groups[0]);
      if (req.gpus <= 0) continue;
      Rng draw(1);
      const framework::CycleContext ctx{s.state(), j, 0, 0, draw};
      for (int32_t ti = -1; ti < static_cast<int32_t>(c.gpu_types().size()); ++ti) {
        const GpuTypeId only = ti < 0 ? GpuTypeId() : GpuTypeId(static_cast<int16_t>(ti));
        std::optional<int64_t> lowest;
        std::optional<NodeId> best;
        int64_t best_score = 0;
        int32_t fits = 0;
        for (int32_t i = 0; i < c.num_nodes(); ++i) {
          const NodeId id(i);
          if (!s.state().up(id) || (only.valid() && c.node(id).gpu_type != only)) continue;
          bool pass = true;
          for (const auto* f : filters) pass = pass && f->Filter(ctx, req, id);
          if (!pass) continue;
          ++fits;
          const int64_t score = bestfit.Score(ctx, req, id);
          if (!lowest || score < *lowest) lowest = score;
          if (!best || score > best_score) {
            best = id;
            best_score = score;
          }
        }
        if (only.valid()) {
          if (const std::optional<int32_t> counted = search.CountFitsByBuckets(s.state(), req, only)) {
            EXPECT_EQ(*counted, fits) << "seed " << seed << " query " << q << " type " << ti;
            ++by_buckets;
          }
        }
        const std::optional<int64_t> low = search.FindLowest(ctx, req, bestfit, filters, type_cpu_max, only);
        const bool applies = search.applicable();
        const std::optional<NodeId> found = search.Find(ctx, req, bestfit, filters, type_cpu_max, only);
        if (!applies) continue;
        EXPECT_EQ(low, lowest) << "seed " << seed << " query " << q << " type " << ti;
        EXPECT_EQ(found, best) << "seed " << seed << " query " << q << " type " << ti;
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 1000);
  EXPECT_GT(by_buckets, 100);
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
