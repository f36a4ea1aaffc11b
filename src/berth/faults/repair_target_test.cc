// The replacement search of in-place repair and the spare rule
// (repair_target.h), on a cluster state built by hand.
#include "berth/faults/repair_target.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace berth::faults {
namespace {

// Leaves a and b of three 8-GPU nodes (ids 0-2 and 3-5); with `nvlink`, the
// first two nodes of each leaf share an NVLink domain.
cluster::Cluster Cluster(bool nvlink = false) {
  cluster::ClusterBuilder b;
  for (int i = 0; i < 6; ++i) {
    cluster::NodeSpec n;
    n.name = std::string(i < 3 ? "a-" : "b-") + std::to_string(i % 3);
    n.cpu_milli = 64000;
    n.memory_mib = 1 << 19;
    n.gpu_count = 8;
    n.gpu_type = "H100";
    n.spine = "s";
    n.leaf = i < 3 ? "a" : "b";
    if (nvlink) n.nvlink = n.leaf + "-nv" + std::to_string(i % 3 / 2);
    b.AddNode(std::move(n));
  }
  auto c = std::move(b).Build();
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

framework::TaskPlacement Place(state::ClusterState& st, int32_t task, int32_t node, int gpus = 8) {
  framework::TaskPlacement p;
  p.task = TaskKey{JobId(1), task};
  p.alloc.node = NodeId(node);
  p.alloc.gpu_mask = (uint64_t{1} << gpus) - 1;
  p.alloc.milli_per_gpu = kMilliPerGpu;
  p.alloc.cpu_milli = 1000;
  p.alloc.memory_mib = 1024;
  EXPECT_TRUE(st.Apply(state::PlaceTask{p.task, p.alloc}).ok());
  return p;
}

RepairNodes All(std::vector<int32_t> spares = {}) {
  RepairNodes r;
  r.spare = [spares](NodeId n) { return std::count(spares.begin(), spares.end(), n.value()) > 0; };
  r.usable = [](NodeId) { return true; };
  return r;
}

TEST(FindRepairTargetTest, TakesTheFreeNodeOfTheGangsLeafNeverTheFailedOne) {
  const cluster::Cluster c = Cluster();
  state::ClusterState st(c);
  const std::vector<framework::TaskPlacement> gang = {Place(st, 0, 0), Place(st, 1, 1)};
  auto pick = FindRepairTarget(c, st, gang, gang[0], NodeId(0), All());
  ASSERT_TRUE(pick.has_value());
  EXPECT_EQ(pick->alloc.node, NodeId(2));
  EXPECT_FALSE(pick->spare);
  EXPECT_EQ(pick->alloc.gpu_count(), 8);
}

TEST(FindRepairTargetTest, PrefersASpareAndStaysInsideTheGangsDomain) {
  const cluster::Cluster c = Cluster();
  state::ClusterState st(c);
  std::vector<framework::TaskPlacement> gang = {Place(st, 0, 0), Place(st, 1, 1)};
  // A spare of the leaf (node 2) goes first... (a spare is down for the scheduler)
  ASSERT_TRUE(st.Apply(state::SetNodeUp{NodeId(2), false}).ok());
  auto pick = FindRepairTarget(c, st, gang, gang[1], NodeId(1), All({2}));
  ASSERT_TRUE(pick.has_value());
  EXPECT_EQ(pick->alloc.node, NodeId(2));
  EXPECT_TRUE(pick->spare);
  // ...and when the leaf is full, leaf b is not used: the gang lives in leaf a.
  ASSERT_TRUE(st.Apply(state::SetNodeUp{NodeId(2), true}).ok());
  (void)Place(st, 9, 2);
  EXPECT_FALSE(FindRepairTarget(c, st, gang, gang[1], NodeId(1), All()).has_value());
  // A gang spanning both leaves may move within the spine (the best fit: fewest GPUs left).
  gang.push_back(Place(st, 2, 3, 4));
  auto wide = FindRepairTarget(c, st, gang, gang[1], NodeId(1), All());
  ASSERT_TRUE(wide.has_value());
  EXPECT_EQ(wide->alloc.node, NodeId(4));  // ties between 4 and 5: the lower id
}

TEST(FindRepairTargetTest, NodesTheCallerCannotUseAreSkipped) {
  const cluster::Cluster c = Cluster();
  state::ClusterState st(c);
  const std::vector<framework::TaskPlacement> gang = {Place(st, 0, 0), Place(st, 1, 1)};
  RepairNodes r = All();
  r.usable = [](NodeId n) { return n != NodeId(2); };
  EXPECT_FALSE(FindRepairTarget(c, st, gang, gang[0], NodeId(0), r).has_value());
}

TEST(FindRepairTargetTest, KeepsTheTaskInsideItsNvlinkDomain) {
  const cluster::Cluster c = Cluster(/*nvlink=*/true);
  state::ClusterState st(c);
  // Nodes 0 and 1 share an NVLink domain; node 2 is free but on another one.
  const std::vector<framework::TaskPlacement> gang = {Place(st, 0, 0, 4), Place(st, 1, 1, 4)};
  auto pick = FindRepairTarget(c, st, gang, gang[0], NodeId(0), All());
  ASSERT_TRUE(pick.has_value());
  EXPECT_EQ(pick->alloc.node, NodeId(1));  // the other node of nv-0, on its free GPUs
  EXPECT_EQ(pick->alloc.gpu_mask, 0xf0u);
}

TEST(SparesToAddTest, KeepsNPerDomainAtMostHalfTheNodesHighestIdsFirst) {
  const cluster::Cluster c = Cluster();
  std::vector<bool> spare(6, false), busy(6, false);
  busy[5] = true;
  auto is_spare = [&](NodeId n) { return static_cast<bool>(spare[n.value()]); };
  auto may = [&](NodeId n) { return !busy[n.value()]; };
  auto add = SparesToAdd(c, {SpareMode::kLeaf, 5}, is_spare, may);
  EXPECT_EQ(add, (std::vector<NodeId>{NodeId(2), NodeId(4)}));  // 3 nodes: at most 1 each
  spare[2] = true;
  add = SparesToAdd(c, {SpareMode::kSpine, 2}, is_spare, may);
  EXPECT_EQ(add, std::vector<NodeId>{NodeId(4)});  // node 2 counts already
  EXPECT_TRUE(SparesToAdd(c, {SpareMode::kNone, 1}, is_spare, may).empty());
}

}  // namespace
}  // namespace berth::faults
