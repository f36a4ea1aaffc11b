// The quota plugin's bookkeeping of a gang's tentative charges: Reserve adds,
// Unreserve (rollback) removes, a refused task leaves nothing behind, Admit
// starts afresh; and its Admit check is a necessary condition only.
#include "berth/plugins/quota/quota.h"

#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"
#include "berth/tenancy/ledger.h"

namespace berth::plugins {
namespace {

constexpr int64_t G = kMilliPerGpu;

class QuotaPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = std::make_unique<cluster::Cluster>(cluster::ParseClusterSpec("1x8:H100+1x8:A100").value());
    tenancy::QueueSpec a;
    a.name = "a";
    a.tenants = {"alice"};
    a.quotas["H100"] = tenancy::Quota{.guarantee = 0, .limit = 3 * G};
    a.quotas["*"] = tenancy::Quota{.guarantee = 0, .limit = 5 * G};
    ledger_ = std::make_unique<tenancy::Ledger>(tenancy::QueueTree::Create({a}, *cluster_).value(), *cluster_);
    state_ = std::make_unique<state::ClusterState>(*cluster_);
    job_.id = JobId(7);
    job_.tenant = "alice";
    job_.groups.resize(1);
    job_.groups[0].count = 4;
    job_.groups[0].gpus = 1;
    queue_ = ledger_->tree().Find("a");
    framework::SchedulerView view{*state_, *ledger_, {}, 0, {}};
    plugin_.BeginPass(view);
  }
  framework::CycleContext Ctx(int32_t task) {
    return framework::CycleContext{*state_, job_, task, 0, rng_, 0, {}, ledger_.get(), queue_};
  }
  state::Allocation Alloc(const std::string& node, uint64_t mask) {
    state::Allocation a;
    a.node = *cluster_->FindNode(node);
    a.gpu_mask = mask;
    a.milli_per_gpu = kMilliPerGpu;
    return a;
  }
  NodeId H100() { return *cluster_->FindNode("node-0"); }
  NodeId A100() { return *cluster_->FindNode("node-1"); }

  std::unique_ptr<cluster::Cluster> cluster_;
  std::unique_ptr<tenancy::Ledger> ledger_;
  std::unique_ptr<state::ClusterState> state_;
  job::JobSpec job_;
  int32_t queue_ = -1;
  Rng rng_{1};
  QuotaPlugin plugin_;
};

TEST_F(QuotaPluginTest, GangChargesAddUpAndRollBack) {
  ASSERT_EQ(cluster_->node(H100()).name, "node-0");
  ASSERT_TRUE(plugin_.Admit(job_, *state_, 0).ok());
  EXPECT_TRUE(plugin_.Reserve(Ctx(0), Alloc("node-0", 0b11)).ok());
  EXPECT_TRUE(plugin_.Reserve(Ctx(1), Alloc("node-0", 0b100)).ok());
  framework::Verdict v = plugin_.Reserve(Ctx(2), Alloc("node-0", 0b1000));  // a 4th H100 GPU
  EXPECT_EQ(v.code, framework::VerdictCode::kUnschedulable);
  EXPECT_EQ(v.plugin, "quota");
  EXPECT_EQ(v.reason, "queue 'a' (H100): would use 4 GPUs, over its limit of 3");
  // The scheduler rolls the gang back: every placed task, the refused one too.
  for (int32_t t = 2; t >= 0; --t) plugin_.Unreserve(Ctx(t), Alloc("node-0", 1));
  // Nothing is left behind: the same gang fits again.
  EXPECT_TRUE(plugin_.Reserve(Ctx(0), Alloc("node-0", 0b111)).ok());
  // Other types count in all types: 3 + 2 A100s = 5, the all-types limit.
  EXPECT_TRUE(plugin_.Reserve(Ctx(1), Alloc("node-1", 0b11)).ok());
  v = plugin_.Reserve(Ctx(2), Alloc("node-1", 0b100));
  EXPECT_EQ(v.reason, "queue 'a' (all GPU types): would use 6 GPUs, over its limit of 5");
  // The next Admit starts afresh.
  ASSERT_TRUE(plugin_.Admit(job_, *state_, 0).ok());
  EXPECT_TRUE(plugin_.Reserve(Ctx(0), Alloc("node-1", 0b11111)).ok());
  framework::PluginCounters counters;
  plugin_.Counters(counters);
  ASSERT_EQ(counters.size(), 2u);
  EXPECT_EQ(counters[1], (std::pair<std::string, double>{"quota.refused_reserve", 2}));
}

TEST_F(QuotaPluginTest, AdmitIsANecessaryConditionOnly) {
  // 4 GPUs of any type: over the H100 limit, but a split over types fits.
  EXPECT_TRUE(plugin_.Admit(job_, *state_, 0).ok());
  job_.groups[0].count = 6;  // 6 > 5 in all types: can never fit now
  framework::Verdict v = plugin_.Admit(job_, *state_, 0);
  EXPECT_EQ(v.code, framework::VerdictCode::kUnschedulable);
  EXPECT_EQ(v.reason, "queue 'a' (all GPU types): would use 6 GPUs, over its limit of 5");
  job_.groups[0].count = 4;
  job_.groups[0].gpu_type_spec = "H100";
  job::ResolveGpuTypes(job_, *cluster_);
  v = plugin_.Admit(job_, *state_, 0);  // H100 only: 4 > 3
  EXPECT_EQ(v.reason, "queue 'a' (H100): would use 4 GPUs, over its limit of 3");
  job_.groups[0].min_count = 3;  // an elastic gang needs only its minimum
  EXPECT_TRUE(plugin_.Admit(job_, *state_, 0).ok());
}

TEST_F(QuotaPluginTest, FilterSteersTasksToTypesWithRoom) {
  ASSERT_TRUE(plugin_.Admit(job_, *state_, 0).ok());
  framework::TaskRequest one;
  one.gpus = 1;
  EXPECT_TRUE(plugin_.Filter(Ctx(0), one, H100()));
  ASSERT_TRUE(plugin_.Reserve(Ctx(0), Alloc("node-0", 0b111)).ok());  // H100 full for a
  EXPECT_FALSE(plugin_.Filter(Ctx(1), one, H100()));
  EXPECT_TRUE(plugin_.Filter(Ctx(1), one, A100()));
  ASSERT_TRUE(plugin_.Reserve(Ctx(1), Alloc("node-1", 0b11)).ok());  // all types full
  // Over every quota: no opinion, Reserve gives the verdict.
  EXPECT_TRUE(plugin_.Filter(Ctx(2), one, H100()));
  EXPECT_TRUE(plugin_.Filter(Ctx(2), one, A100()));
}

}  // namespace
}  // namespace berth::plugins
