// The share-class index and the memory estimate of ClusterState.
#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"
#include "berth/common/rng.h"
#include "berth/state/cluster_state.h"

namespace berth::state {
namespace {

// Membership recomputed from the per-GPU free milli.
bool InShareClass(const ClusterState& s, NodeId n, int c) {
  if (!s.up(n)) return false;
  const auto& node = s.cluster().node(n);
  for (int g = 0; g < node.gpu_count; ++g) {
    const MilliGpu f = s.gpu_free(n, g);
    if (f > 0 && f < kMilliPerGpu && ClusterState::ShareClassOf(f) == c) return true;
  }
  return false;
}

TEST(ShareIndex, FollowsRandomSharesReleasesAndNodeFailures) {
  auto cluster = cluster::ParseClusterSpec("40x8:A100+20x4:T4");
  ASSERT_TRUE(cluster.ok());
  ClusterState s(*cluster);
  Rng rng(11);
  std::vector<TaskKey> held;
  for (int step = 0; step < 3000; ++step) {
    const NodeId n(static_cast<int32_t>(rng.Uniform(cluster->num_nodes())));
    const uint64_t op = rng.Uniform(10);
    if (op == 0) {
      ASSERT_TRUE(s.Apply(SetNodeUp{n, !s.up(n)}).ok());
    } else if (op < 4 && !held.empty()) {
      const size_t k = rng.Uniform(held.size());
      ASSERT_TRUE(s.Apply(ReleaseTask{held[k]}).ok());
      held[k] = held.back();
      held.pop_back();
    } else if (s.up(n)) {
      const int g = static_cast<int>(rng.Uniform(cluster->node(n).gpu_count));
      const MilliGpu free = s.gpu_free(n, g);
      if (free == 0) continue;
      Allocation a;
      a.node = n;
      a.gpu_mask = uint64_t{1} << g;
      a.milli_per_gpu = 1 + static_cast<MilliGpu>(rng.Uniform(free));
      const TaskKey key{JobId(step), 0};
      ASSERT_TRUE(s.Apply(PlaceTask{key, a}).ok());
      held.push_back(key);
    }
    if (step % 50 == 0) {
      ASSERT_TRUE(s.CheckIndexes().ok()) << s.CheckIndexes().ToString();
      for (int32_t i = 0; i < cluster->num_nodes(); ++i) {
        const NodeId id(i);
        const auto t = cluster->node(id).gpu_type;
        for (int c = 0; c < kNumShareClasses; ++c)
          ASSERT_EQ(s.nodes_with_share_class(t, c).Test(i), InShareClass(s, id, c)) << "node " << i << " class " << c;
      }
    }
  }
}

TEST(StateMemory, CountsTheTaskRecords) {
  auto cluster = cluster::ParseClusterSpec("100x8:H100");
  ASSERT_TRUE(cluster.ok());
  ClusterState s(*cluster);
  const StateMemory empty = s.Memory();
  EXPECT_GE(empty.per_gpu, 800u * sizeof(MilliGpu));
  EXPECT_EQ(empty.task_records + empty.task_lists, 0u);
  for (int i = 0; i < 100; ++i) {
    Allocation a;
    a.node = NodeId(i);
    a.gpu_mask = 1;
    a.milli_per_gpu = kMilliPerGpu;
    ASSERT_TRUE(s.Apply(PlaceTask{TaskKey{JobId(i), 0}, a}).ok());
  }
  EXPECT_GE(s.Memory().task_records, 100u * sizeof(TaskTable::Record));
  EXPECT_EQ(s.MemoryBytes(), s.Memory().total());
}

}  // namespace
}  // namespace berth::state
