// SetMinRuntime: the preemption guard of a policy, set from --min-runtime.
#include <gtest/gtest.h>

#include "berth/plugins/builtin.h"
#include "berth/plugins/builtin_test_util.h"

namespace berth::plugins {
namespace {

framework::Profile Policy(const std::string& name) { return BuiltinPolicy(name); }

TEST(SetMinRuntime, EveryPostFilterGetsTheGuard) {
  framework::Profile p = Policy("fairshare");
  ASSERT_TRUE(SetMinRuntime(p, SecondsToUs(90)).ok());
  ASSERT_EQ(p.post_filter.size(), 1u);
  EXPECT_EQ(std::stod(p.post_filter[0].args.at("min_runtime_s")), 90.0);
  // The built framework accepts the arg.
  framework::PluginRegistry plugins;
  ASSERT_TRUE(RegisterBuiltinPlugins(plugins).ok());
  EXPECT_TRUE(framework::Framework::Create(p, plugins).ok());
}

TEST(SetMinRuntime, OrderPreemptionGetsItThroughTheQueueSort) {
  // srtf is both the queue sort and the post-filter: one plugin, built with the queue sort's args.
  framework::Profile p = Policy("srtf");
  ASSERT_TRUE(SetMinRuntime(p, 0).ok());
  EXPECT_EQ(std::stod(p.queue_sort_args.at("min_runtime_s")), 0.0);
  framework::PluginRegistry plugins;
  ASSERT_TRUE(RegisterBuiltinPlugins(plugins).ok());
  EXPECT_TRUE(framework::Framework::Create(p, plugins).ok());
}

TEST(SetMinRuntime, TiresiasPolluxHasNoGuardUnlessGiven) {
  // tiresias-pollux: Pollux's simulator settings (16 GPU-hours, no promotion, no minimum runtime).
  framework::Profile p = Policy("tiresias-pollux");
  EXPECT_EQ(p.queue_sort, "tiresias");
  EXPECT_EQ(p.queue_sort_args.at("thresholds_gpu_h"), "16");
  EXPECT_EQ(p.queue_sort_args.at("promote_after"), "0");
  EXPECT_EQ(std::stod(p.queue_sort_args.at("min_runtime_s")), 0.0);
  framework::PluginRegistry plugins;
  ASSERT_TRUE(RegisterBuiltinPlugins(plugins).ok());
  EXPECT_TRUE(framework::Framework::Create(p, plugins).ok());
  ASSERT_TRUE(SetMinRuntime(p, SecondsToUs(120)).ok());
  EXPECT_EQ(std::stod(p.queue_sort_args.at("min_runtime_s")), 120.0);
  EXPECT_TRUE(framework::Framework::Create(p, plugins).ok());
}

TEST(SetMinRuntime, APolicyThatDoesNotPreemptIsAnError) {
  framework::Profile p = Policy("bestfit");
  Status s = SetMinRuntime(p, SecondsToUs(60));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("policy 'bestfit' does not preempt"), std::string::npos) << s.message();
  EXPECT_FALSE(SetMinRuntime(p, -1).ok());
}

}  // namespace
}  // namespace berth::plugins
