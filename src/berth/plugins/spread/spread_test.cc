// The spread plugin's node rule for the victim search (RulesOut) is its
// filter's rule: the nodes it marks for a replica are exactly those Filter
// rejects for it, counted from the state's tasks of the running replicas.
#include "berth/plugins/spread/spread.h"

#include <gtest/gtest.h>

#include <memory>
#include <utility>
#include <vector>

#include "berth/cluster/loaders.h"
#include "berth/common/rng.h"
#include "berth/state/cluster_state.h"
#include "berth/tenancy/ledger.h"

namespace berth::plugins {
namespace {

constexpr JobId kChat{100};

job::JobSpec Replica(int64_t id, int32_t per_node, int32_t per_leaf) {
  job::JobSpec j;
  j.id = JobId(id);
  j.replica_of = kChat;
  j.service = job::ServiceSpec{};
  j.service->max_per_node = per_node;
  j.service->max_per_leaf = per_leaf;
  job::TaskGroup g;
  g.gpus = 1;
  j.groups.push_back(g);
  return j;
}

class SpreadRule : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = cluster::ParseClusterSpec("4x8:H100/leaf=2");  // leaves {node-0, node-1}, {node-2, node-3}
    ASSERT_TRUE(c.ok());
    cluster_ = std::make_unique<cluster::Cluster>(std::move(c).value());
    state_ = std::make_unique<state::ClusterState>(*cluster_);
    ledger_ = std::make_unique<tenancy::Ledger>(tenancy::QueueTree(), *cluster_);
  }
  // A running replica (or other job) with one 1-GPU task on `node`, GPU `gpu`.
  void Run(const job::JobSpec& j, int32_t node, int32_t gpu) {
    state::Allocation a;
    a.node = NodeId(node);
    a.gpu_mask = uint64_t{1} << gpu;
    a.milli_per_gpu = kMilliPerGpu;
    ASSERT_TRUE(state_->Apply(state::PlaceTask{TaskKey{j.id, 0}, a}).ok());
    plugin_.OnStart(j);
  }
  std::vector<uint8_t> RuledOut(const job::JobSpec& j, bool* applies = nullptr) const {
    const framework::SchedulerView view{*state_, *ledger_, {}, 0, {}};
    std::vector<uint8_t> out(4, 0);
    const bool a = plugin_.RulesOut(view, j, out);
    if (applies) *applies = a;
    return out;
  }
  std::vector<uint8_t> FilterFails(const job::JobSpec& j) const {
    Rng rng(1);
    const framework::CycleContext ctx{*state_, j, 0, 0, rng, 0, {}};
    const framework::TaskRequest req = framework::TaskRequest::FromGroup(j.groups[0]);
    std::vector<uint8_t> out;
    for (int32_t n = 0; n < 4; ++n) out.push_back(plugin_.Filter(ctx, req, NodeId(n)) ? 0 : 1);
    return out;
  }

  std::unique_ptr<cluster::Cluster> cluster_;
  std::unique_ptr<state::ClusterState> state_;
  std::unique_ptr<tenancy::Ledger> ledger_;
  SpreadPlugin plugin_;
};

TEST_F(SpreadRule, IsALimitRuleThatAppliesOnlyToReplicasWithALimit) {
  EXPECT_EQ(plugin_.NodeRule(), framework::NodeRuleKind::kLimit);
  Run(Replica(1, 1, 0), 0, 0);
  bool applies = true;
  job::JobSpec batch;
  batch.id = JobId(7);
  EXPECT_EQ(RuledOut(batch, &applies), (std::vector<uint8_t>{0, 0, 0, 0}));
  EXPECT_FALSE(applies);
  EXPECT_EQ(RuledOut(Replica(2, 0, 0), &applies), (std::vector<uint8_t>{0, 0, 0, 0}));  // no limit
  EXPECT_FALSE(applies);
  EXPECT_EQ(RuledOut(Replica(2, 2, 0), &applies), (std::vector<uint8_t>{0, 0, 0, 0}));  // below the limit
  EXPECT_FALSE(applies);
  EXPECT_EQ(RuledOut(Replica(2, 1, 0), &applies), (std::vector<uint8_t>{1, 0, 0, 0}));
  EXPECT_TRUE(applies);
}

TEST_F(SpreadRule, AgreesWithTheFilterPerNodeAndPerLeaf) {
  Run(Replica(1, 2, 3), 0, 0);
  Run(Replica(2, 2, 3), 0, 1);
  Run(Replica(3, 2, 3), 2, 0);
  for (const auto& [id, node] : {std::pair<int64_t, int32_t>{4, 1}, {5, 3}}) {
    job::JobSpec other = Replica(id, 2, 3);
    other.replica_of = JobId(200);  // another service's replicas count for nobody here
    Run(other, node, 0);
  }
  for (int32_t per_node : {0, 1, 2, 3}) {
    for (int32_t per_leaf : {0, 1, 2, 3, 4}) {
      if (per_node == 0 && per_leaf == 0) continue;
      const job::JobSpec j = Replica(9, per_node, per_leaf);
      EXPECT_EQ(RuledOut(j), FilterFails(j)) << "max_per_node " << per_node << ", max_per_leaf " << per_leaf;
    }
  }
  EXPECT_EQ(RuledOut(Replica(9, 2, 0)), (std::vector<uint8_t>{1, 0, 0, 0}));
  EXPECT_EQ(RuledOut(Replica(9, 0, 2)), (std::vector<uint8_t>{1, 1, 0, 0}));  // the first leaf holds 2
  EXPECT_EQ(RuledOut(Replica(9, 0, 1)), (std::vector<uint8_t>{1, 1, 1, 1}));
}

TEST_F(SpreadRule, AFinishedReplicaNoLongerCounts) {
  const job::JobSpec r1 = Replica(1, 1, 0);
  Run(r1, 0, 0);
  EXPECT_EQ(RuledOut(Replica(2, 1, 0)), (std::vector<uint8_t>{1, 0, 0, 0}));
  ASSERT_TRUE(state_->Apply(state::ReleaseTask{TaskKey{r1.id, 0}}).ok());
  plugin_.OnFinish(r1);
  EXPECT_EQ(RuledOut(Replica(2, 1, 0)), (std::vector<uint8_t>{0, 0, 0, 0}));
}

}  // namespace
}  // namespace berth::plugins
