// The entitle filter and score: a queue over its entitlement on a GPU type is
// kept off it while another queue is short there, allowed when nobody is;
// the score prefers the type with the most headroom; neutral when flat.
#include "berth/plugins/entitle/entitle.h"

#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"
#include "berth/framework/plugin.h"
#include "berth/state/cluster_state.h"
#include "berth/tenancy/ledger.h"

namespace berth::plugins {
namespace {

constexpr int64_t G = kMilliPerGpu;

class EntitleTest : public ::testing::Test {
 protected:
  void Build(bool reachable) {
    // node-0: 8 V100 (8-GPU node); node-1, node-2: 2 T4 each.
    cluster_ = std::make_unique<cluster::Cluster>(cluster::ParseClusterSpec("1x8:V100+2x2:T4").value());
    tenancy::QueueSpec a{.name = "a", .tenants = {"a"}}, b{.name = "b", .tenants = {"b"}};
    auto tree = tenancy::QueueTree::Create({a, b}, *cluster_).value();
    if (reachable) tree.set_entitlement(tenancy::EntitlementMode::kReachable, 0);
    ledger_ = std::make_unique<tenancy::Ledger>(std::move(tree), *cluster_);
    state_ = std::make_unique<state::ClusterState>(*cluster_);
    qa_ = ledger_->tree().Find("a");
    qb_ = ledger_->tree().Find("b");
    ledger_->AddDemand(qa_, Job("a", 2, 8));   // 16 GPUs of 8-GPU tasks: only node-0
    ledger_->AddDemand(qb_, Job("b", 20, 1));  // 20 1-GPU tasks: anywhere
    ledger_->Advance(0);
    registry_ = std::make_unique<framework::PluginRegistry>();
    ASSERT_TRUE(RegisterEntitlePlugin(*registry_).ok());
    plugin_ = std::move(registry_->Create("entitle", {})).value();
  }
  static job::JobSpec Job(const std::string& tenant, int32_t tasks, int32_t gpus) {
    job::JobSpec j;
    j.tenant = tenant;
    j.groups.resize(1);
    j.groups[0].count = tasks;
    j.groups[0].gpus = gpus;
    return j;
  }
  bool Filter(const job::JobSpec& job, int32_t queue, const std::string& node) {
    framework::CycleContext ctx{*state_, job, 0, 0, rng_, 0, {}, ledger_.get(), queue};
    return dynamic_cast<framework::FilterPlugin&>(*plugin_).Filter(
        ctx, framework::TaskRequest::FromGroup(job.groups[0]), *cluster_->FindNode(node));
  }
  int64_t Score(const job::JobSpec& job, int32_t queue, const std::string& node) {
    framework::CycleContext ctx{*state_, job, 0, 0, rng_, 0, {}, ledger_.get(), queue};
    return dynamic_cast<framework::ScorePlugin&>(*plugin_).Score(
        ctx, framework::TaskRequest::FromGroup(job.groups[0]), *cluster_->FindNode(node));
  }
  GpuTypeId Type(const std::string& name) { return *cluster_->FindGpuType(name); }

  std::unique_ptr<cluster::Cluster> cluster_;
  std::unique_ptr<tenancy::Ledger> ledger_;
  std::unique_ptr<state::ClusterState> state_;
  std::unique_ptr<framework::PluginRegistry> registry_;
  std::unique_ptr<framework::Plugin> plugin_;
  int32_t qa_ = -1, qb_ = -1;
  Rng rng_{1};
};

TEST_F(EntitleTest, KeepsAQueueOffATypeOthersAreShortOn) {
  Build(true);
  // a is entitled to 6 V100; b to the 4 T4 and 2 V100.
  ASSERT_NEAR(ledger_->entitled_on(qa_, Type("V100")), 6 * G, 1e-6);
  const job::JobSpec one = Job("b", 1, 1);
  EXPECT_TRUE(Filter(one, qb_, "node-0"));  // within b's 2 V100
  ledger_->Charge(qb_, Type("V100"), 2 * G, 0);
  EXPECT_FALSE(Filter(one, qb_, "node-0"));  // a third V100: a is short there
  EXPECT_TRUE(Filter(one, qb_, "node-1"));   // T4: b's own
  EXPECT_GT(Score(one, qb_, "node-1"), Score(one, qb_, "node-0"));
  // Once a holds its 6, nobody is short on V100: b may take the idle GPUs.
  ledger_->Charge(qa_, Type("V100"), 6 * G, 0);
  EXPECT_TRUE(Filter(one, qb_, "node-0"));
}

TEST_F(EntitleTest, NeutralWithAFlatEntitlement) {
  Build(false);
  ledger_->Charge(qb_, Type("V100"), 8 * G, 0);
  const job::JobSpec one = Job("b", 1, 1);
  EXPECT_TRUE(Filter(one, qb_, "node-0"));
  EXPECT_EQ(Score(one, qb_, "node-0"), 0);
}

}  // namespace
}  // namespace berth::plugins
