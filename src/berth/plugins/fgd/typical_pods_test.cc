// Typical pods: counting, ordering, the coverage cut and renormalization.
#include "berth/plugins/fgd/typical_pods.h"
#include "berth/plugins/score/score_test_util.h"

#include <gtest/gtest.h>

namespace berth::plugins::fgd {
namespace {

using berth::plugins::testing::Pod;

std::vector<job::JobSpec> Repeat(const job::JobSpec& j, int n) { return std::vector<job::JobSpec>(n, j); }

void Append(std::vector<job::JobSpec>& to, const std::vector<job::JobSpec>& more) {
  to.insert(to.end(), more.begin(), more.end());
}

TEST(TypicalPods, CountsShapesIgnoringMemoryMostFrequentFirst) {
  std::vector<job::JobSpec> w = Repeat(Pod(4000, 1, 500), 2);
  w.push_back(Pod(4000, 1, 500, "", 99999));  // memory is not part of the shape
  Append(w, Repeat(Pod(8000, 1, 1000), 2));
  w.push_back(Pod(2000, 0, kMilliPerGpu));  // CPU-only
  const TypicalPods t = ComputeTypicalPods(w, 100);
  ASSERT_EQ(t.pods.size(), 3u);
  EXPECT_EQ(t.total_pods, 6);
  EXPECT_EQ(t.covered_pods, 6);
  EXPECT_EQ(t.pods[0].shape, (PodShape{4000, 500, 1, ""}));
  EXPECT_EQ(t.pods[0].count, 3);
  EXPECT_EQ(t.pods[1].shape, (PodShape{8000, 1000, 1, ""}));
  // CPU-only pods have no GPU milli, whatever the task group says.
  EXPECT_EQ(t.pods[2].shape, (PodShape{2000, 0, 0, ""}));
  // Everything kept: weights are plain frequencies.
  EXPECT_DOUBLE_EQ(t.pods[0].weight, 3.0 / 6);
  EXPECT_DOUBLE_EQ(t.pods[2].weight, 1.0 / 6);
}

TEST(TypicalPods, EqualCountsGoToTheLargerShapeFirst) {
  std::vector<job::JobSpec> w = {Pod(4000, 1, 500),      Pod(8000, 1, 200),    Pod(4000, 1, 700),
                                 Pod(4000, 1, 700, "A"), Pod(4000, 1, 700, "B"), Pod(4000, 2, 1000),
                                 Pod(4000, 1, 1000)};
  const TypicalPods t = ComputeTypicalPods(w, 100);
  ASSERT_EQ(t.pods.size(), 7u);
  EXPECT_EQ(t.pods[0].shape.cpu_milli, 8000);
  EXPECT_EQ(t.pods[1].shape, (PodShape{4000, 1000, 2, ""}));
  EXPECT_EQ(t.pods[2].shape, (PodShape{4000, 1000, 1, ""}));
  EXPECT_EQ(t.pods[3].shape, (PodShape{4000, 700, 1, "B"}));
  EXPECT_EQ(t.pods[4].shape, (PodShape{4000, 700, 1, "A"}));
  EXPECT_EQ(t.pods[5].shape, (PodShape{4000, 700, 1, ""}));
  EXPECT_EQ(t.pods[6].shape, (PodShape{4000, 500, 1, ""}));
}

TEST(TypicalPods, StopsOnceCoverageIsReachedAndRenormalizes) {
  std::vector<job::JobSpec> w = Repeat(Pod(1000, 1, 100), 6);
  Append(w, Repeat(Pod(2000, 1, 200), 3));
  w.push_back(Pod(3000, 1, 300));
  // 60% < 90%, then 90% is not below 90%: two shapes.
  const TypicalPods t = ComputeTypicalPods(w, 90);
  ASSERT_EQ(t.pods.size(), 2u);
  EXPECT_EQ(t.covered_pods, 9);
  EXPECT_DOUBLE_EQ(t.coverage(), 0.9);
  EXPECT_DOUBLE_EQ(t.pods[0].weight, (6.0 / 10) / (9.0 / 10));
  EXPECT_DOUBLE_EQ(t.pods[1].weight, (3.0 / 10) / (9.0 / 10));
  EXPECT_NEAR(t.pods[0].weight + t.pods[1].weight, 1.0, 1e-15);
  // 95%: all three needed.
  EXPECT_EQ(ComputeTypicalPods(w, 95).pods.size(), 3u);
}

TEST(TypicalPods, EveryTaskOfAGangIsOnePod) {
  job::JobSpec gang = Pod(1000, 8, 1000);
  gang.groups[0].count = 4;
  std::vector<job::JobSpec> w = {gang, Pod(500, 1, 250)};
  const TypicalPods t = ComputeTypicalPods(w, 100);
  EXPECT_EQ(t.total_pods, 5);
  ASSERT_EQ(t.pods.size(), 2u);
  EXPECT_EQ(t.pods[0].count, 4);
}

TEST(TypicalPods, EmptyWorkloadHasNone) {
  const TypicalPods t = ComputeTypicalPods(std::vector<job::JobSpec>{}, 95);
  EXPECT_TRUE(t.pods.empty());
  EXPECT_EQ(t.coverage(), 0);
}

}  // namespace
}  // namespace berth::plugins::fgd
