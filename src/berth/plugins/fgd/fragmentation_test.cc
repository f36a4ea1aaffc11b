// FGD's fragmentation measure: each category on hand-made nodes, and the
// cluster totals on a small state.
#include "berth/plugins/fgd/fragmentation.h"

#include <gtest/gtest.h>

#include <vector>

namespace berth::plugins::fgd {
namespace {

cluster::NodeSpec Node(std::string name, MilliCpu cpu, int32_t gpus, std::string type) {
  cluster::NodeSpec n;
  n.name = std::move(name);
  n.cpu_milli = cpu;
  n.memory_mib = 1 << 20;
  n.gpu_count = gpus;
  n.gpu_type = std::move(type);
  return n;
}

cluster::Cluster TwoNodes() {
  cluster::ClusterBuilder b;
  b.AddNode(Node("g2", 64000, 8, "G2"));
  b.AddNode(Node("t4", 16000, 2, "T4"));
  auto c = std::move(b).Build();
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

TypicalPods One(PodShape shape) { return TypicalPods{{TypicalPod{std::move(shape), 1, 1.0}}, 1, 1}; }

class Frag : public ::testing::Test {
 protected:
  cluster::Cluster cluster_ = TwoNodes();
  GpuTypeId g2_ = *cluster_.FindGpuType("G2");
  GpuTypeId t4_ = *cluster_.FindGpuType("T4");
  std::vector<MilliGpu> partly_used_ = {300, 1000, 1000, 1000, 1000, 1000, 1000, 1000};
};

TEST_F(Frag, WorkedExampleFromTheHeader) {
  const FragModel m(One({4000, 500, 1, ""}), cluster_);
  const FragAmounts a = m.NodeAmounts(partly_used_, 64000, g2_);
  EXPECT_DOUBLE_EQ(a[kQ2LackGpu], 300);
  EXPECT_DOUBLE_EQ(a[kQ3Satisfied], 7000);
  EXPECT_DOUBLE_EQ(m.NodeFrag(partly_used_, 64000, g2_), 300);
}

TEST_F(Frag, CpuShortMakesEverythingAFragment) {
  const FragModel m(One({4000, 500, 1, ""}), cluster_);
  EXPECT_DOUBLE_EQ(m.NodeAmounts(partly_used_, 3999, g2_)[kQ4LackCpu], 7300);
  EXPECT_DOUBLE_EQ(m.NodeFrag(partly_used_, 3999, g2_), 7300);
}

TEST_F(Frag, NoGpuFitsIsLackGpuOrLackBoth) {
  const FragModel m(One({4000, 500, 1, ""}), cluster_);
  const std::vector<MilliGpu> small = {300, 200};
  EXPECT_DOUBLE_EQ(m.NodeAmounts(small, 4000, t4_)[kQ2LackGpu], 500);
  EXPECT_DOUBLE_EQ(m.NodeAmounts(small, 100, t4_)[kQ1LackBoth], 500);
}

TEST_F(Frag, SpecExcludingTheNodeTypeIsNoAccess) {
  const FragModel m(One({4000, 500, 1, "T4|V100M16"}), cluster_);
  EXPECT_DOUBLE_EQ(m.NodeAmounts(partly_used_, 64000, g2_)[kNoAccess], 7300);
  const std::vector<MilliGpu> t4 = {1000, 1000};
  EXPECT_DOUBLE_EQ(m.NodeFrag(t4, 16000, t4_), 0);
  // A spec naming no type of the cluster can be used nowhere.
  const FragModel unknown(One({4000, 500, 1, "H100"}), cluster_);
  EXPECT_DOUBLE_EQ(unknown.NodeFrag(t4, 16000, t4_), 2000);
}

TEST_F(Frag, CpuOnlyTypicalPodLeavesTheGpusIdle) {
  const FragModel m(One({8000, 0, 0, ""}), cluster_);
  EXPECT_DOUBLE_EQ(m.NodeAmounts(partly_used_, 8000, g2_)[kXlSatisfied], 7300);
  EXPECT_DOUBLE_EQ(m.NodeAmounts(partly_used_, 7999, g2_)[kXrLackCpu], 7300);
  EXPECT_DOUBLE_EQ(m.NodeFrag(partly_used_, 8000, g2_), 7300);
}

TEST_F(Frag, MultiGpuTypicalPodNeedsThatManyGpus) {
  const FragModel m(One({1000, 1000, 2, ""}), cluster_);
  const std::vector<MilliGpu> two_free = {1000, 600, 1000};
  EXPECT_DOUBLE_EQ(m.NodeFrag(two_free, 64000, g2_), 600);
  const std::vector<MilliGpu> one_free = {1000, 600, 999};
  EXPECT_DOUBLE_EQ(m.NodeFrag(one_free, 64000, g2_), 2599);
}

TEST_F(Frag, WeightsMixTheTypicalPods) {
  TypicalPods t;
  t.pods = {{{4000, 500, 1, ""}, 3, 0.75}, {{4000, 200, 1, ""}, 1, 0.25}};
  const FragModel m(t, cluster_);
  // 300 free on GPU 0: a fragment for the 500 pod only.
  EXPECT_DOUBLE_EQ(m.NodeFrag(partly_used_, 64000, g2_), 0.75 * 300);
}

TEST_F(Frag, ClusterTotals) {
  const FragModel m(One({4000, 500, 1, ""}), cluster_);
  state::ClusterState s(cluster_);
  ASSERT_TRUE(s.Apply(state::PlaceTask{{JobId(1), 0}, {NodeId(0), 1, 700, 4000, 1024}}).ok());
  ASSERT_TRUE(s.Apply(state::PlaceTask{{JobId(2), 0}, {NodeId(1), 3, 1000, 14000, 1024}}).ok());
  const ClusterFragmentation f = MeasureCluster(m, s);
  EXPECT_DOUBLE_EQ(f.frag_milli, 300);  // node 1 is full: nothing idle there
  EXPECT_EQ(f.idle_milli, 7300);
  EXPECT_EQ(f.capacity_milli, 10000);
  EXPECT_DOUBLE_EQ(f.rate(), 300.0 / 7300);
  EXPECT_DOUBLE_EQ(f.share(), 300.0 / 10000);
}

}  // namespace
}  // namespace berth::plugins::fgd
