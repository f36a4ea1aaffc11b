// The Pollux workload reader: field mapping, the apps folder, bad lines, and
// a replay where the runtime follows the goodput model.
#include <filesystem>

#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"
#include "berth/plugins/builtin.h"
#include "berth/sim/readers/reader_test_util.h"
#include "berth/sim/readers/readers.h"
#include "berth/sim/replay.h"
#include "berth/testing/paths.h"

namespace berth::sim {
namespace {

std::string Workload(int n) { return testing::DataDir() + "/pollux-philly/workloads/workload-" + std::to_string(n) + ".csv"; }

TEST(PolluxReader, RealWorkload) {
  if (!std::filesystem::exists(Workload(1))) GTEST_SKIP() << "no Pollux data";
  auto t = ReadTrace(Workload(1), "pollux", {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 160u);
  EXPECT_EQ(t->format, "pollux");
  ASSERT_NE(t->goodput, nullptr);
  // cifar10-0,107,cifar10,6,2048
  const auto& j = t->jobs[0];
  EXPECT_EQ(j.name, "cifar10-0");
  EXPECT_EQ(j.submit_time, 107 * kUsPerSecond);
  EXPECT_EQ(j.job_class, "cifar10");
  EXPECT_EQ(j.batch_size, 2048);
  EXPECT_EQ(j.duration, -1);
  EXPECT_TRUE(j.elastic());
  EXPECT_EQ(j.groups[0].count, 6);
  EXPECT_EQ(j.groups[0].gpus, 1);
  for (const auto& x : t->jobs) EXPECT_NE(t->goodput->Find(x.job_class), nullptr) << x.name;
  EXPECT_EQ(GuessTraceFormat(Workload(1)), "pollux");
}

TEST(PolluxReader, BadLinesAndMissingApps) {
  const std::string dir = TestDir();
  std::filesystem::create_directories(dir + "/w");
  const std::string header = "name,time,application,num_replicas,batch_size\n";
  // No apps folder beside the workloads folder.
  auto t = ReadTrace(WriteFile(dir + "/w", "workload-1.csv", header + "a,1,cifar10,1,128\n"), "pollux", {});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("application profiles"), std::string::npos) << t.status().message();
  if (!std::filesystem::exists(testing::DataDir() + "/pollux-philly/apps")) return;
  ReadOptions ro;
  ro.apps_dir = testing::DataDir() + "/pollux-philly/apps";
  t = ReadTrace(WriteFile(dir + "/w", "workload-2.csv", header + "a,1,resnet,1,128\n"), "pollux", ro);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("workload-2.csv:2: application: 'resnet'"), std::string::npos)
      << t.status().message();
  t = ReadTrace(WriteFile(dir + "/w", "workload-3.csv", header + "a,1,ncf,0,128\n"), "pollux", ro);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("num_replicas"), std::string::npos);
  t = ReadTrace(WriteFile(dir + "/w", "workload-4.csv", header + "a,1,ncf,1,128\na,2,ncf,1,256\n"), "pollux", ro);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("already on line 2"), std::string::npos);
}

// One job alone: its JCT is the model's time to reach the target at its
// allocation (plus nothing: it starts on arrival).
TEST(PolluxReplay, RuntimeFollowsTheGoodputModel) {
  if (!std::filesystem::exists(testing::DataDir() + "/pollux-philly/apps")) GTEST_SKIP() << "no Pollux data";
  const std::string dir = TestDir();
  std::filesystem::create_directories(dir + "/w");
  ReadOptions ro;
  ro.apps_dir = testing::DataDir() + "/pollux-philly/apps";
  auto t = ReadTrace(WriteFile(dir + "/w", "workload-1.csv",
                               "name,time,application,num_replicas,batch_size\nc,10,cifar10,4,512\n"),
                     "pollux", ro);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto c = cluster::ParseClusterSpec("2x4:V100");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  framework::PluginRegistry plugins;
  ASSERT_TRUE(plugins::RegisterBuiltinPlugins(plugins).ok());
  framework::PolicyRegistry policies;
  ASSERT_TRUE(plugins::RegisterBuiltinPolicies(policies).ok());
  auto profile = policies.Find("tiresias");
  ASSERT_TRUE(profile.ok());
  auto r = RunReplay(*c, *t, *profile, plugins, ReplayOptions{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const elastic::GoodputModel* m = t->goodput->Find("cifar10");
  const double want = m->SecondsToFinish(0, 4, 1, 512);
  EXPECT_EQ(r->jobs_unfinished, 0);
  EXPECT_NEAR(r->jct_s.mean, want, 1.0);
  // The goodput policy sizes the lone job itself: it finishes sooner.
  auto g = policies.Find("goodput");
  ASSERT_TRUE(g.ok());
  auto rg = RunReplay(*c, *t, *g, plugins, ReplayOptions{});
  ASSERT_TRUE(rg.ok()) << rg.status().ToString();
  EXPECT_EQ(rg->jobs_unfinished, 0);
  EXPECT_LT(rg->jct_s.mean, want);
}

}  // namespace
}  // namespace berth::sim
