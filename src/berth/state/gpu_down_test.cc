// Tests of SetGpuUp: a failed GPU takes only itself out of the node, never
// while a task holds it, and random sequences of place / release / GPU down /
// GPU up / node down keep every incremental index equal to a full recompute.
#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"
#include "berth/common/rng.h"
#include "berth/state/cluster_state.h"

namespace berth::state {
namespace {

cluster::Cluster Make(const std::string& spec) {
  auto c = cluster::LoadCluster(spec);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(*c);
}

Allocation Whole(NodeId n, uint64_t mask) { return {n, mask, kMilliPerGpu, 1000, 1024}; }

TEST(GpuDown, TakesOnlyThatGpuOut) {
  const cluster::Cluster c = Make("2x8:H100/leaf=2");
  ClusterState s(c);
  const NodeId n0(0);
  ASSERT_TRUE(s.Apply(SetGpuUp{n0, 3, false}).ok());
  EXPECT_EQ(s.gpu_down_mask(n0), uint64_t{1} << 3);
  EXPECT_EQ(s.full_free_gpus(n0), 7);
  EXPECT_EQ(s.gpu_free(n0, 3), 0);
  EXPECT_EQ(s.node_free_milli(n0), 7 * kMilliPerGpu);
  EXPECT_EQ(s.free_full_gpus_total(), 15);
  EXPECT_TRUE(s.up(n0));
  EXPECT_TRUE(s.nodes_with_full_free(c.node(n0).gpu_type, 7).Test(0));
  // Nothing may be placed on it, whole or shared; the other GPUs still serve.
  EXPECT_FALSE(s.Apply(PlaceTask{TaskKey{JobId(1), 0}, Whole(n0, 0xFF)}).ok());
  EXPECT_FALSE(s.Apply(PlaceTask{TaskKey{JobId(1), 0}, {n0, uint64_t{1} << 3, 500, 0, 0}}).ok());
  EXPECT_TRUE(s.Apply(PlaceTask{TaskKey{JobId(1), 0}, Whole(n0, 0xF7)}).ok());
  EXPECT_EQ(s.full_free_gpus(n0), 0);
  EXPECT_EQ(s.allocated_milli(), 7 * kMilliPerGpu);  // a down GPU is not allocated
  EXPECT_TRUE(s.CheckIndexes().ok());
  // Down twice is a no-op; up restores it.
  ASSERT_TRUE(s.Apply(SetGpuUp{n0, 3, false}).ok());
  ASSERT_TRUE(s.Apply(SetGpuUp{n0, 3, true}).ok());
  EXPECT_EQ(s.full_free_gpus(n0), 1);
  EXPECT_EQ(s.gpu_down_mask(n0), 0u);
  EXPECT_TRUE(s.CheckIndexes().ok());
}

TEST(GpuDown, RefusedWhileATaskHoldsIt) {
  const cluster::Cluster c = Make("1x8:H100");
  ClusterState s(c);
  ASSERT_TRUE(s.Apply(PlaceTask{TaskKey{JobId(1), 0}, {NodeId(0), 1, 300, 0, 0}}).ok());
  const Status st = s.Apply(SetGpuUp{NodeId(0), 0, false});
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("in use"), std::string::npos);
  EXPECT_FALSE(s.Apply(SetGpuUp{NodeId(0), 8, false}).ok());  // no such GPU
  EXPECT_FALSE(s.Apply(SetGpuUp{NodeId(5), 0, false}).ok());  // no such node
  ASSERT_TRUE(s.Apply(ReleaseTask{TaskKey{JobId(1), 0}}).ok());
  EXPECT_TRUE(s.Apply(SetGpuUp{NodeId(0), 0, false}).ok());
}

TEST(GpuDown, RandomSequencesKeepIndexesExact) {
  const cluster::Cluster c = Make("6x8:H100/leaf=3+4x4:V100");
  for (uint64_t seed : {1, 2, 3}) {
    ClusterState s(c);
    Rng rng(seed);
    std::vector<TaskKey> live;
    int64_t next = 0, downs = 0;
    for (int step = 0; step < 3000; ++step) {
      const NodeId n(static_cast<int32_t>(rng.Uniform(c.num_nodes())));
      const int gpus = c.node(n).gpu_count;
      const uint64_t r = rng.Uniform(10);
      Status st;
      if (r < 4) {
        const TaskKey k{JobId(next++), 0};
        const uint64_t mask = uint64_t{1} << rng.Uniform(gpus);
        const MilliGpu milli = rng.Uniform(2) ? kMilliPerGpu : 250;
        st = s.Apply(PlaceTask{k, {n, mask, milli, 0, 0}});
        if (st.ok()) live.push_back(k);
      } else if (r < 7) {
        if (live.empty()) continue;
        const size_t i = rng.Uniform(live.size());
        st = s.Apply(ReleaseTask{live[i]});
        ASSERT_TRUE(st.ok()) << st.ToString();
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      } else if (r < 9) {
        const int g = static_cast<int>(rng.Uniform(gpus));
        st = s.Apply(SetGpuUp{n, g, rng.Uniform(2) == 0});
        if (st.ok() && (s.gpu_down_mask(n) >> g & 1)) ++downs;
      } else {
        st = s.Apply(SetNodeUp{n, rng.Uniform(3) != 0});
      }
      const Status idx = s.CheckIndexes();
      ASSERT_TRUE(idx.ok()) << "seed " << seed << " step " << step << ": " << idx.ToString();
      // A down GPU is never held: its free milli is 0 and no task's mask names it.
      for (int32_t i = 0; i < c.num_nodes(); ++i) {
        const NodeId node(i);
        for (TaskKey k : s.tasks_on(node)) ASSERT_EQ(s.Find(k)->gpu_mask & s.gpu_down_mask(node), 0u);
      }
    }
    EXPECT_GT(downs, 50);
  }
}

}  // namespace
}  // namespace berth::state
