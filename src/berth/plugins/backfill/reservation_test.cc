// Reservation math on hand-made timelines: shadow times, the nodes chosen,
// spare GPUs, GPU types, several groups, earlier reservations.
#include "berth/plugins/backfill/reservation.h"

#include <gtest/gtest.h>

namespace berth::plugins::backfill {
namespace {

constexpr TimeUs kHour = 3600 * kUsPerSecond;
const GpuTypeId kA(0), kB(1);

// Nodes of `gpus` GPUs of the given types, with `free` GPUs free now.
Timeline Nodes(std::vector<GpuTypeId> types, std::vector<int32_t> free) {
  Timeline t;
  t.type = std::move(types);
  t.free_now = std::move(free);
  for (int32_t i = 0; i < t.num_nodes(); ++i) t.rank.push_back(i);
  return t;
}

GpuDemand Demand(int32_t gpus, int32_t tasks, cluster::GpuTypeSet types = {}) {
  GpuDemand d;
  d.groups.push_back({gpus, tasks, types});
  return d;
}

std::vector<std::pair<int32_t, int32_t>> Pairs(const std::vector<NodeGpus>& v) {
  std::vector<std::pair<int32_t, int32_t>> out;
  for (const auto& g : v) out.emplace_back(g.node, g.gpus);
  return out;
}

using P = std::vector<std::pair<int32_t, int32_t>>;

// The example of reservation.h.
TEST(EarliestStart, WholeNodesAsJobsEnd) {
  Timeline t = Nodes({kA, kA, kA, kA}, {0, 0, 0, 8});
  t.releases = {{2 * kHour, 0, 8}, {2 * kHour, 1, 8}, {1 * kHour, 2, 8}};
  t.Prepare();
  auto plan = EarliestStart(t, Demand(8, 3), 0, kHour);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->start, 2 * kHour);
  EXPECT_EQ(Pairs(plan->nodes), (P{{0, 8}, {1, 8}, {2, 8}}));  // the busy nodes; node 3 stays spare
  EXPECT_EQ(plan->free_at_start, 32);
  EXPECT_EQ(plan->extra, 8);
  // Two nodes are whole at 1h.
  plan = EarliestStart(t, Demand(8, 2), 0, kHour);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->start, 1 * kHour);
  EXPECT_EQ(Pairs(plan->nodes), (P{{2, 8}, {3, 8}}));
}

TEST(EarliestStart, FitsNowOrNever) {
  Timeline t = Nodes({kA, kA}, {8, 4});
  t.releases = {{kHour, 1, 4}};
  t.Prepare();
  auto now = EarliestStart(t, Demand(4, 3), 5, kHour);
  ASSERT_TRUE(now);
  EXPECT_EQ(now->start, 5);
  EXPECT_EQ(Pairs(now->nodes), (P{{0, 8}, {1, 4}}));  // fewest free now first: node 1's 4, then node 0
  EXPECT_FALSE(EarliestStart(t, Demand(8, 3), 0, kHour));  // 24 GPUs on 16
  EXPECT_FALSE(EarliestStart(t, Demand(16, 1), 0, kHour));  // no node of 16
  EXPECT_FALSE(EarliestStart(t, GpuDemand{}, 0, kHour));
}

// Free GPUs that add up are not enough: a task needs them on one node.
TEST(EarliestStart, PerNodeNotAggregate) {
  Timeline t = Nodes({kA, kA, kA}, {4, 4, 2});
  t.releases = {{kHour, 2, 2}, {3 * kHour, 0, 4}, {2 * kHour, 1, 2}};
  t.Prepare();
  auto plan = EarliestStart(t, Demand(8, 1), 0, kHour);  // 10 GPUs free now, no node with 8
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->start, 3 * kHour);
  EXPECT_EQ(Pairs(plan->nodes), (P{{0, 8}}));
  plan = EarliestStart(t, Demand(4, 3), 0, kHour);  // 4 + 4 now; node 2 reaches 4 at 1h
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->start, kHour);
}

TEST(EarliestStart, OnlyAcceptedTypes) {
  Timeline t = Nodes({kA, kB, kB}, {8, 0, 0});
  t.releases = {{kHour, 1, 8}, {2 * kHour, 2, 8}};
  t.Prepare();
  cluster::GpuTypeSet b = cluster::GpuTypeSet::Of(kB);
  auto plan = EarliestStart(t, Demand(8, 1, b), 0, kHour);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->start, kHour);  // node 0 is free but of type A
  EXPECT_EQ(Pairs(plan->nodes), (P{{1, 8}}));
  EXPECT_EQ(plan->free_at_start, 8);  // GPUs of type B free at 1h
  EXPECT_EQ(plan->extra, 0);
  plan = EarliestStart(t, Demand(8, 2, b), 0, kHour);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->start, 2 * kHour);
  // Any type: fits now on node 0.
  plan = EarliestStart(t, Demand(8, 1), 0, kHour);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->start, 0);
}

TEST(EarliestStart, SeveralGroupsLargestFirst) {
  Timeline t = Nodes({kA, kA, kA}, {8, 4, 2});
  t.releases = {{kHour, 2, 6}};
  t.Prepare();
  GpuDemand d = Demand(8, 1);
  d.groups.push_back({4, 2, {}});  // one 8-GPU task and two 4-GPU tasks
  auto plan = EarliestStart(t, d, 0, kHour);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->start, kHour);  // now: node 0 takes the 8, one 4 fits (node 1), not two
  // The 8 goes to node 2 (fewest free now), the 4s to node 1, then node 0.
  EXPECT_EQ(Pairs(plan->nodes), (P{{0, 4}, {1, 4}, {2, 8}}));
  EXPECT_EQ(plan->extra, 8 + 4 + 8 - 16);
}

// An earlier reservation holds its nodes for its run; a later job must fit
// beside it for the whole of its own predicted run.
TEST(EarliestStart, BesideEarlierReservations) {
  Timeline t = Nodes({kA, kA, kA, kA}, {0, 0, 0, 8});
  t.releases = {{2 * kHour, 0, 8}, {2 * kHour, 1, 8}, {2 * kHour, 2, 8}};
  t.Prepare();
  auto first = EarliestStart(t, Demand(8, 4), 0, kHour);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->start, 2 * kHour);
  std::vector<Hold> holds{{first->start, first->start + kHour, first->nodes}};
  // Runs 1h: done before the hold begins, starts now.
  auto short_job = EarliestStart(t, Demand(8, 1), 0, kHour, holds);
  ASSERT_TRUE(short_job);
  EXPECT_EQ(short_job->start, 0);
  // Runs 3h: would overlap the hold everywhere; starts when the hold ends.
  auto long_job = EarliestStart(t, Demand(8, 1), 0, 3 * kHour, holds);
  ASSERT_TRUE(long_job);
  EXPECT_EQ(long_job->start, 3 * kHour);
}

TEST(EarliestStart, ReleasesAtTheSameTimeAreTakenTogether) {
  Timeline t = Nodes({kA, kA}, {0, 0});
  t.releases = {{kHour, 1, 4}, {kHour, 0, 8}, {kHour, 1, 4}};
  t.Prepare();
  auto plan = EarliestStart(t, Demand(8, 2), 0, kHour);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->start, kHour);
  EXPECT_EQ(plan->extra, 0);
}

}  // namespace
}  // namespace berth::plugins::backfill
