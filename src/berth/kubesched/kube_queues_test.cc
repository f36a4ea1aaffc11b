// The Kubernetes scheduler's queue tree and charging (kube_queues.h): Queue
// objects in normalized units charge a pod's GPUs times the speed of the type
// it lands on, as `berth simulate` and `berth serve` do.
#include "berth/kubesched/kube_queues.h"

#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"
#include "berth/plugins/builtin.h"

namespace berth::kube {
namespace {

using nlohmann::json;

const std::string kCatalog = std::string(BERTH_SOURCE_DIR) + "/data/accelerators.yaml";

std::map<std::string, json> Objects(const json& a_extra = json::object()) {
  json a = {{"tenants", {"alice"}}, {"quotas", {{"*", {{"guarantee", 4}, {"limit", 16}}}}}};
  a.update(a_extra);
  return {{"a", a}, {"b", {{"tenants", {"bob"}}}}};
}

job::JobSpec Pod(int64_t id, const std::string& ns, const std::string& type) {
  job::JobSpec j;
  j.id = JobId(id);
  j.name = ns + "/p" + std::to_string(id);
  j.tenant = ns;  // a pod's namespace is its tenant
  j.groups.push_back({.count = 1, .gpus = 8});
  j.groups[0].gpu_type_spec = type;
  return j;
}

TEST(KubeQueuesTest, NormalizedQueueObjectsChargeTheTypeAPodLandsOn) {
  cluster::Cluster c = cluster::ParseClusterSpec("1x8:H100+1x8:V100").value();
  auto tree = TreeFromQueueObjects(Objects({{"unit", "normalized"}, {"reference", "H100"}}), nullptr, c);
  ASSERT_TRUE(tree.ok()) << tree.status().message();
  EXPECT_EQ((*tree)->unit(), tenancy::Unit::kNormalized);
  EXPECT_EQ((*tree)->reference(), "H100");

  scheduler::SchedulerOptions so;
  ASSERT_TRUE(SetQueueCharging(*tree, kCatalog, "", c, so).ok());
  ASSERT_TRUE(so.speeds);
  const GpuTypeId v100 = c.FindGpuType("V100").value();
  const GpuTypeId h100 = c.FindGpuType("H100").value();
  const job::JobSpec on_v100 = Pod(1, "alice", "V100");
  const int64_t v100_charge = tenancy::ScaleMilli(8 * kMilliPerGpu, so.speeds->PerMillion(on_v100, v100));
  ASSERT_LT(v100_charge, 8 * kMilliPerGpu);  // a V100 is worth less than an H100
  EXPECT_EQ(tenancy::ScaleMilli(8 * kMilliPerGpu, so.speeds->PerMillion(on_v100, h100)), 8 * kMilliPerGpu);

  framework::PluginRegistry plugins;
  ASSERT_TRUE(plugins::RegisterBuiltinPlugins(plugins).ok());
  framework::PolicyRegistry policies;
  ASSERT_TRUE(plugins::RegisterBuiltinPolicies(policies).ok());
  auto fw = framework::Framework::Create(policies.Find("bestfit").value(), plugins).value();
  ManualClock clock{1000};
  scheduler::Scheduler s(c, std::move(fw), so, clock);
  ASSERT_TRUE(s.Submit(on_v100).ok());
  s.Schedule();
  ASSERT_EQ(s.Find(JobId(1))->state, job::JobState::kRunning);
  const tenancy::Ledger& l = s.ledger();
  const int32_t a = l.tree().Find("a");
  EXPECT_EQ(l.usage(a, l.all_types_dim()), v100_charge);
  EXPECT_EQ(l.usage(a, v100.value()), v100_charge);
  ASSERT_TRUE(s.Submit(Pod(2, "alice", "H100")).ok());
  s.Schedule();
  ASSERT_EQ(s.Find(JobId(2))->state, job::JobState::kRunning);
  EXPECT_EQ(l.usage(a, l.all_types_dim()), v100_charge + 8 * kMilliPerGpu);
  // The charge goes when the pod does.
  ASSERT_TRUE(s.Finish(JobId(1), job::JobState::kSucceeded).ok());
  EXPECT_EQ(l.usage(a, l.all_types_dim()), 8 * kMilliPerGpu);
}

TEST(KubeQueuesTest, UnitFromTheQueueFileUnlessTheObjectsSayOtherwise) {
  cluster::Cluster c = cluster::ParseClusterSpec("1x8:H100+1x8:V100").value();
  tenancy::QueueFile file;
  file.unit = tenancy::Unit::kNormalized;
  file.reference = "H100";
  auto tree = TreeFromQueueObjects(Objects(), &file, c);
  ASSERT_TRUE(tree.ok()) << tree.status().message();
  EXPECT_EQ((*tree)->unit(), tenancy::Unit::kNormalized);
  tree = TreeFromQueueObjects(Objects({{"unit", "gpus"}}), &file, c);
  ASSERT_TRUE(tree.ok()) << tree.status().message();
  EXPECT_EQ((*tree)->unit(), tenancy::Unit::kGpus);
  // Without either: GPUs, and no speeds to build.
  tree = TreeFromQueueObjects(Objects(), nullptr, c);
  ASSERT_TRUE(tree.ok()) << tree.status().message();
  EXPECT_EQ((*tree)->unit(), tenancy::Unit::kGpus);
  scheduler::SchedulerOptions so;
  ASSERT_TRUE(SetQueueCharging(*tree, "/nonexistent/accelerators.yaml", "", c, so).ok());
  EXPECT_FALSE(so.speeds);
  EXPECT_TRUE(so.queues);
}

TEST(KubeQueuesTest, BadUnitsNameTheQueueObject) {
  cluster::Cluster c = cluster::ParseClusterSpec("1x8:H100").value();
  auto bad = TreeFromQueueObjects(Objects({{"unit", "flops"}}), nullptr, c);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "Queue a: spec.unit: expected gpus or normalized, found 'flops'");
  std::map<std::string, json> two = Objects({{"unit", "normalized"}});
  two["b"]["unit"] = "gpus";
  bad = TreeFromQueueObjects(two, nullptr, c);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "Queue b: spec.unit is 'gpus' but Queue a says 'normalized' (one unit for the whole tree)");
  // A normalized tree needs every GPU type in the catalog.
  auto tree = TreeFromQueueObjects(Objects({{"unit", "normalized"}}), nullptr, c);
  ASSERT_TRUE(tree.ok()) << tree.status().message();
  scheduler::SchedulerOptions so;
  Status s = SetQueueCharging(*tree, "/nonexistent/accelerators.yaml", "", c, so);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("queues in normalized units"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace berth::kube
