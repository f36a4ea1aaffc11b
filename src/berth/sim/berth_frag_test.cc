// Regression test of the berth-frag policy on the FGD experiment: default
// openb trace, seed 42 (Berth's own shuffle, resampling and node ranking),
// load 1.3. berth-frag must allocate clearly more than fgd and leave less of
// the cluster fragmented; both runs are deterministic. Figures of this run
// (docs/results/berth-frag.md): fgd 5,926,930 milli-GPU (95.41%), berth-frag
// 5,960,480 (95.95%).
#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"
#include "berth/plugins/builtin.h"
#include "berth/sim/fgd_protocol.h"
#include "berth/sim/readers/readers.h"
#include "berth/testing/openb.h"
#include "berth/testing/paths.h"

namespace berth::sim {
namespace {

class BerthFragRegression : public ::testing::Test {
 protected:
  void SetUp() override {
    auto in = testing::OpenbDefault();
    ASSERT_TRUE(in.ok()) << in.status().ToString();
    cluster_ = &(*in)->cluster;
    trace_ = &(*in)->trace;
    ASSERT_TRUE(plugins::RegisterBuiltinPlugins(plugins_).ok());
    ASSERT_TRUE(plugins::RegisterBuiltinPolicies(policies_).ok());
  }

  PolicyResult Run(const std::string& policy) {
    FgdOptions o;
    o.seed = 42;
    o.load = 1.3;
    auto in = BuildFgdInput(*cluster_, *trace_, o);
    EXPECT_TRUE(in.ok()) << in.status().ToString();
    auto profile = policies_.Find(policy);
    EXPECT_TRUE(profile.ok()) << profile.status().ToString();
    if (!in.ok() || !profile.ok()) return {};
    auto r = RunFgd(*cluster_, *in, *profile, plugins_, o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : PolicyResult{};
  }

  const cluster::Cluster* cluster_ = nullptr;
  const Trace* trace_ = nullptr;
  framework::PluginRegistry plugins_;
  framework::PolicyRegistry policies_;
};

TEST_F(BerthFragRegression, AllocatesMoreThanFgdOnTheDefaultTraceSeed42) {
  const PolicyResult fgd = Run("fgd");
  const PolicyResult frag = Run("berth-frag");
  ASSERT_EQ(fgd.jobs_total, frag.jobs_total);
  EXPECT_EQ(fgd.allocated_milli_gpu, 5'926'930);
  // At least 0.3 points of the cluster (18.6 GPUs) more; measured: 0.54.
  EXPECT_GT(frag.allocated_milli_gpu, fgd.allocated_milli_gpu + 18'636)
      << "berth-frag " << frag.gpu_allocation_ratio << " vs fgd " << fgd.gpu_allocation_ratio;
  EXPECT_LT(frag.fragmented_gpu_share, fgd.fragmented_gpu_share);
  // Deterministic: the same decisions again.
  EXPECT_EQ(Run("berth-frag").decision_log_hash, frag.decision_log_hash);
}

TEST_F(BerthFragRegression, NeedsAWorkload) {
  auto profile = policies_.Find("berth-frag");
  ASSERT_TRUE(profile.ok());
  auto fw = framework::Framework::Create(*profile, plugins_);
  ASSERT_FALSE(fw.ok());
  EXPECT_NE(fw.status().message().find("workload"), std::string::npos) << fw.status().ToString();
}

}  // namespace
}  // namespace berth::sim
