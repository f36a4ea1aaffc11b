// Plugins that are neutral for a task drop out of its decision, which then
// takes the fast path of what is left, and the decisions stay the scan's.
//
// Property: `fairshare-entitled` (fit, quota and entitle filters; the entitle
// score weighed 100 before best fit) on a two-type cluster with a queue tree,
// with and without a reachable entitlement, against the same policy with
// SchedulerOptions::full_scan, over a random stream of submissions,
// departures and evictions: the same starts, evictions and hash after every
// pass, and the same verdict for every job the fast pass reached. Without a reachable entitlement the entitle plugin is
// neutral (ScorePlugin::Neutral, FilterPlugin::PassesEveryNode), so best fit
// decides from the indexes; with one it scores by GPU type, so each type's
// best node comes from the indexes and the types are compared
// (Scheduler::PlaceByType).
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "berth/cluster/loaders.h"
#include "berth/common/clock.h"
#include "berth/common/rng.h"
#include "berth/scheduler/lockstep_test_util.h"
#include "berth/scheduler/scheduler.h"
#include "berth/scheduler/tree_lockstep_test_util.h"

namespace berth::scheduler {
namespace {

using lockstep::Registries;

job::JobSpec RandomJob(Rng& rng, int64_t id) {
  job::JobSpec j = tree_lockstep::TenantJob(rng, id);
  job::TaskGroup g;
  g.name = "w";
  const int32_t sizes[] = {0, 1, 1, 2, 4, 8};
  g.gpus = sizes[rng.Uniform(6)];
  g.count = rng.Uniform(4) == 0 ? 2 + static_cast<int32_t>(rng.Uniform(3)) : 1;
  if (rng.Uniform(4) == 0) g.gpu_type_spec = rng.Uniform(2) ? "H100" : "A100";
  g.cpu_milli = static_cast<MilliCpu>(1000 * (1 + rng.Uniform(8)));
  g.memory_mib = 1024;
  j.groups.push_back(g);
  return j;
}

// Returns the placements the index search settled in the fast scheduler.
int64_t RunLockstep(uint64_t seed, bool reachable, int steps) {
  Registries reg;
  Rng rng(seed);
  auto cluster = cluster::ParseClusterSpec("6x8:H100/leaf=2+6x8:A100/leaf=2");
  EXPECT_TRUE(cluster.ok()) << cluster.status().ToString();
  if (!cluster.ok()) return 0;
  SchedulerOptions opts;
  opts.seed = seed;
  auto tree = tree_lockstep::Tree(*cluster, rng, {.parent_weights = 3, .leaf_weights = 4, .guarantees = true});
  if (reachable) {
    tenancy::QueueTree t = *tree;
    t.set_entitlement(tenancy::EntitlementMode::kReachable, 0);
    tree = std::make_shared<const tenancy::QueueTree>(std::move(t));
  }
  opts.queues = tree;
  SchedulerOptions scan_opts = opts;
  scan_opts.full_scan = true;
  ManualClock clock(0);
  const framework::Profile profile = *reg.policies.Find("fairshare-entitled");
  const framework::PluginContext context{&*cluster, {}};
  tree_lockstep::Twins twins = tree_lockstep::MakeTwins(*cluster, profile, reg.plugins, context, opts, scan_opts, clock);
  if (!twins.fast) return 0;
  Scheduler& fast = *twins.fast;
  Scheduler& scan = *twins.oracle;
  std::vector<JobId> running, pending;
  int64_t next_id = 0;
  for (int step = 0; step < steps; ++step) {
    clock.Advance(SecondsToUs(static_cast<double>(1 + rng.Uniform(5))));
    const uint64_t op = rng.Uniform(20);
    if (op < 10) {
      tree_lockstep::SubmitBoth(fast, scan, RandomJob(rng, next_id++), pending);
    } else if (op < 16) {
      tree_lockstep::FinishOne(fast, scan, running, rng);
    } else if (op < 17) {
      tree_lockstep::CancelOne(fast, scan, pending, rng);
    }
    if (::testing::Test::HasFailure()) return 0;
    // The scan oracle's passes reach every job (full_scan implies full_pass).
    int64_t stopped = 0;
    tree_lockstep::PassAndCompareReached(fast, scan, running, pending,
                                         "seed " + std::to_string(seed) + " step " + std::to_string(step) +
                                             (reachable ? " reachable" : " flat"),
                                         &stopped);
    if (::testing::Test::HasFailure()) return 0;
  }
  EXPECT_EQ(scan.placement_counts().index_search, 0);
  return fast.placement_counts().index_search;
}

TEST(NeutralPlugins, FairshareEntitledFlatDecidesFromTheIndexes) {
  int64_t settled = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) settled += RunLockstep(seed, /*reachable=*/false, 400);
  EXPECT_GT(settled, 500);
}

TEST(NeutralPlugins, FairshareEntitledReachableKeepsTheScansChoice) {
  int64_t settled = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) settled += RunLockstep(seed, /*reachable=*/true, 400);
  // GPU tasks are decided type by type from the indexes (CPU-only tasks are
  // still scanned: the entitle score weighs the node's type).
  std::cout << "reachable: " << settled << " placements from the indexes\n";
  EXPECT_GT(settled, 500);
}

}  // namespace
}  // namespace berth::scheduler
