// --plugin-arg PLUGIN.KEY=VALUE: framework::ApplyPluginArgs on the built-in
// policies, and the plugins' own checks of what it sets.
#include <gtest/gtest.h>

#include "berth/plugins/builtin.h"
#include "berth/plugins/builtin_test_util.h"

namespace berth::plugins {
namespace {

framework::Profile Policy(const std::string& name) { return BuiltinPolicy(name); }

Status Build(const framework::Profile& p) {
  framework::PluginRegistry plugins;
  EXPECT_TRUE(RegisterBuiltinPlugins(plugins).ok());
  return framework::Framework::Create(p, plugins).status();
}

TEST(PluginArgs, ParseNamesWhatIsMissing) {
  auto a = framework::ParsePluginArg("goodput.exact_cells=0");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->plugin, "goodput");
  EXPECT_EQ(a->key, "exact_cells");
  EXPECT_EQ(a->value, "0");
  EXPECT_EQ(framework::ParsePluginArg("tiresias.thresholds_gpu_h=1,16")->value, "1,16");
  EXPECT_NE(framework::ParsePluginArg("goodput").status().message().find("expected PLUGIN.KEY=VALUE"),
            std::string::npos);
  EXPECT_NE(framework::ParsePluginArg(".round_s=3").status().message().find("no plugin name"), std::string::npos);
  EXPECT_NE(framework::ParsePluginArg("goodput.=3").status().message().find("no key"), std::string::npos);
  EXPECT_FALSE(framework::ParsePluginArg("round_s=3.5").ok());  // the '.' after '=' is the value's
}

TEST(PluginArgs, EveryUseOfThePluginGetsIt) {
  // goodput is both the admission and the resize plugin: one instance, one set of args.
  framework::Profile g = Policy("goodput");
  ASSERT_TRUE(framework::ApplyPluginArgs({&g}, {"goodput.round_s=30", "goodput.exact_cells=0"}).ok());
  EXPECT_EQ(g.admit.at(0).args.at("round_s"), "30");
  EXPECT_EQ(g.resize.at(0).args.at("exact_cells"), "0");
  EXPECT_TRUE(Build(g).ok());
  // The queue sort's args (tiresias' thresholds).
  framework::Profile t = Policy("tiresias");
  ASSERT_TRUE(framework::ApplyPluginArgs({&t}, {"tiresias.thresholds_gpu_h=16"}).ok());
  EXPECT_EQ(t.queue_sort_args.at("thresholds_gpu_h"), "16");
  EXPECT_TRUE(Build(t).ok());
}

TEST(PluginArgs, ErrorsNameTheArgAndThePolicies) {
  framework::Profile f = Policy("fifo"), t = Policy("tiresias");
  Status s = framework::ApplyPluginArgs({&f, &t}, {"goodput.round_s=30"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no policy here uses plugin 'goodput' (policies: fifo, tiresias)"), std::string::npos)
      << s.message();
  // One policy of the run using it is enough.
  framework::Profile g = Policy("goodput");
  EXPECT_TRUE(framework::ApplyPluginArgs({&f, &g}, {"goodput.round_s=30"}).ok());
  // A key or a value the plugin does not take fails when the policy is built.
  framework::Profile bad = Policy("goodput");
  ASSERT_TRUE(framework::ApplyPluginArgs({&bad}, {"goodput.rounds=30"}).ok());
  EXPECT_NE(Build(bad).message().find("unknown arg 'rounds' (known: round_s, exact_cells)"), std::string::npos);
  framework::Profile neg = Policy("goodput");
  ASSERT_TRUE(framework::ApplyPluginArgs({&neg}, {"goodput.exact_cells=-1"}).ok());
  EXPECT_NE(Build(neg).message().find("exact_cells must be a count >= 0"), std::string::npos);
}

}  // namespace
}  // namespace berth::plugins
