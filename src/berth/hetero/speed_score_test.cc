// The hetero-speed and hetero-cost policies as the product registers them:
// a profile from the policy registry, the model loaded from the catalog (and
// Gavel's table), the job placed on the fastest or cheapest type.
#include "berth/hetero/speed_score.h"

#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"
#include "berth/common/clock.h"
#include "berth/hetero/hetero_test_util.h"
#include "berth/plugins/builtin.h"
#include "berth/scheduler/scheduler.h"

namespace berth::hetero {
namespace {

// The GPU type the policy puts a one-GPU job of class `cls` on.
std::string Place(const std::string& policy, const std::string& throughputs, const std::string& cls) {
  auto c = cluster::LoadCluster("1x4:V100+1x4:K80");
  EXPECT_TRUE(c.ok());
  framework::PolicyRegistry policies;
  EXPECT_TRUE(plugins::RegisterBuiltinPolicies(policies).ok());
  EXPECT_TRUE(RegisterHeteroPolicies(policies).ok());
  auto profile = policies.Find(policy);
  EXPECT_TRUE(profile.ok()) << profile.status().message();
  EXPECT_TRUE(UsesHeteroPlugins(*profile));
  framework::PluginRegistry plugins;
  EXPECT_TRUE(plugins::RegisterBuiltinPlugins(plugins).ok());
  auto model = LoadThroughputModel(testutil::CatalogPath(), throughputs);
  EXPECT_TRUE(model.ok()) << model.status().message();
  EXPECT_TRUE(RegisterHeteroPlugins(plugins, *model).ok());
  auto fw = framework::Framework::Create(*profile, plugins);
  EXPECT_TRUE(fw.ok()) << fw.status().message();
  ManualClock clock;
  scheduler::Scheduler s(*c, std::move(*fw), {}, clock);
  job::JobSpec j;
  j.name = "j";
  j.job_class = cls;
  j.groups.push_back({.count = 1, .gpus = 1, .cpu_milli = 1000, .memory_mib = 1024});
  EXPECT_TRUE(s.Submit(j).ok());
  EXPECT_EQ(s.Schedule().size(), 1u);
  return c->gpu_type(c->node(s.Find(JobId(0))->placements[0].alloc.node).gpu_type).name;
}

TEST(HeteroPolicies, FastestAndCheapestWithTheMeasuredTable) {
  EXPECT_EQ(Place("hetero-speed", testutil::GavelPath(), "ResNet-50 (batch size 64)"), "V100");
  EXPECT_EQ(Place("hetero-speed", testutil::GavelPath(), "Recommendation (batch size 2048)"), "K80");
  EXPECT_EQ(Place("hetero-cost", testutil::GavelPath(), "A3C"), "K80");
}

TEST(HeteroPolicies, SpecsOnlyModelForUnknownClasses) {
  // No measured table: the spec-based estimate ranks V100 above K80.
  EXPECT_EQ(Place("hetero-speed", "", "my-model"), "V100");
}

TEST(HeteroPolicies, ComposedWithATenancyPolicy) {
  // fairshare's order, quota and preemption; hetero-speed's choice of type.
  EXPECT_EQ(Place("fairshare+hetero-speed", testutil::GavelPath(), "ResNet-50 (batch size 64)"), "V100");
  EXPECT_EQ(Place("fairshare+hetero-speed", testutil::GavelPath(), "Recommendation (batch size 2048)"), "K80");
  EXPECT_EQ(Place("fairshare+hetero-cost", testutil::GavelPath(), "A3C"), "K80");

  framework::PolicyRegistry policies;
  ASSERT_TRUE(plugins::RegisterBuiltinPolicies(policies).ok());
  ASSERT_TRUE(RegisterHeteroPolicies(policies).ok());
  auto fair = policies.Find("fairshare");
  auto composed = policies.Find("fairshare+hetero-speed");
  ASSERT_TRUE(composed.ok()) << composed.status().message();
  EXPECT_EQ(composed->name, "fairshare+hetero-speed");
  EXPECT_EQ(composed->queue_sort, fair->queue_sort);
  EXPECT_EQ(composed->post_filter.size(), fair->post_filter.size());
  ASSERT_EQ(composed->score.size(), fair->score.size() + 1);
  EXPECT_EQ(composed->score[0].name, "hetero-speed");
  EXPECT_EQ(composed->score[0].weight, 100);

  EXPECT_NE(policies.Find("fairshare+").status().message().find("empty name"), std::string::npos);
  EXPECT_NE(policies.Find("fairshare+fifo").status().message().find("'fifo' adds no placement score"),
            std::string::npos);
  EXPECT_NE(policies.Find("nope+hetero-speed").status().message().find("unknown policy 'nope'"), std::string::npos);
}

TEST(HeteroPolicies, OtherProfilesNeedNoModel) {
  framework::PolicyRegistry policies;
  ASSERT_TRUE(plugins::RegisterBuiltinPolicies(policies).ok());
  ASSERT_TRUE(RegisterHeteroPolicies(policies).ok());
  EXPECT_FALSE(UsesHeteroPlugins(*policies.Find("topology")));
  EXPECT_TRUE(UsesHeteroPlugins(*policies.Find("hetero-cost")));
}

TEST(HeteroPolicies, ModelErrorsNameTheFile) {
  auto m = LoadThroughputModel("/nonexistent/catalog.yaml", "");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("/nonexistent/catalog.yaml"), std::string::npos);
  auto t = LoadThroughputModel(testutil::CatalogPath(), "/nonexistent/table.json");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("/nonexistent/table.json"), std::string::npos);
}

}  // namespace
}  // namespace berth::hetero
