// The "fgd" score plugin: scores, GPU choice for shares, cache invalidation,
// and construction from the driver's workload.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "berth/framework/registry.h"
#include "berth/plugins/builtin.h"
#include "berth/plugins/score/score_test_util.h"

namespace berth::plugins {
namespace {

using berth::plugins::testing::Pod;

class FgdScoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster::ClusterBuilder b;
    for (const char* name : {"n0", "n1"}) {
      cluster::NodeSpec n;
      n.name = name;
      n.cpu_milli = 32000;
      n.memory_mib = 1 << 20;
      n.gpu_count = 2;
      n.gpu_type = "G2";
      b.AddNode(n);
    }
    auto c = std::move(b).Build();
    ASSERT_TRUE(c.ok());
    cluster_ = std::make_unique<cluster::Cluster>(std::move(c).value());
    state_ = std::make_unique<state::ClusterState>(*cluster_);
    ASSERT_TRUE(RegisterBuiltinPlugins(registry_).ok());
    // One typical pod: 1 core, half a GPU.
    workload_.assign(10, Pod(1000, 1, 500));
    auto p = registry_.Create("fgd", {}, framework::PluginContext{cluster_.get(), workload_});
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    plugin_ = std::move(p).value();
    score_ = dynamic_cast<framework::ScorePlugin*>(plugin_.get());
    ASSERT_NE(score_, nullptr);
  }

  int64_t Score(const job::JobSpec& pod, int node) {
    framework::CycleContext ctx{*state_, pod, 0, 0, rng_, 0, {}};
    return score_->Score(ctx, framework::TaskRequest::FromGroup(pod.groups[0]), NodeId(node));
  }
  std::optional<uint64_t> Gpus(const job::JobSpec& pod, int node) {
    framework::CycleContext ctx{*state_, pod, 0, 0, rng_, 0, {}};
    return score_->SelectGpus(ctx, framework::TaskRequest::FromGroup(pod.groups[0]), NodeId(node));
  }
  void Place(int64_t id, int node, uint64_t mask, MilliGpu milli) {
    ASSERT_TRUE(state_->Apply(state::PlaceTask{{JobId(id), 0}, {NodeId(node), mask, milli, 1000, 1024}}).ok());
  }

  std::unique_ptr<cluster::Cluster> cluster_;
  std::unique_ptr<state::ClusterState> state_;
  framework::PluginRegistry registry_;
  std::vector<job::JobSpec> workload_;
  std::unique_ptr<framework::Plugin> plugin_;
  framework::ScorePlugin* score_ = nullptr;
  Rng rng_{1};
};

TEST_F(FgdScoreTest, NoChangeInFragmentationScoresFifty) {
  EXPECT_EQ(Score(Pod(1000, 1, 500), 0), 50);
  EXPECT_EQ(Score(Pod(1000, 1, 1000), 0), 50);
  EXPECT_EQ(Score(Pod(1000, 0, kMilliPerGpu), 0), 50);
}

TEST_F(FgdScoreTest, LeavingAnUnusableRemainderScoresLower) {
  // 700 on an idle GPU leaves 300 that the typical 500 pod cannot use:
  // F grows by 300, trunc(100 * sigmoid(-0.3)) = 42.
  EXPECT_EQ(Score(Pod(1000, 1, 700), 0), 42);
}

TEST_F(FgdScoreTest, ShareGoesToTheGpuThatWonInsideTheScore) {
  Place(1, 0, 0b10, 700);  // node 0: GPU 1 has 300 free (a fragment)
  // 200 on GPU 1 shrinks the fragment to 100 (+200 -> 54); on GPU 0 it
  // leaves F unchanged (50). GPU 1 wins, though GPU 0 has the lower index.
  EXPECT_EQ(Score(Pod(1000, 1, 200), 0), 54);
  EXPECT_EQ(Gpus(Pod(1000, 1, 200), 0), uint64_t{0b10});
  // Equal scores: the lowest index.
  EXPECT_EQ(Gpus(Pod(1000, 1, 500), 1), uint64_t{0b01});
  // Whole GPUs: the scheduler's default (lowest-index free GPUs).
  EXPECT_EQ(Gpus(Pod(1000, 1, 1000), 1), std::nullopt);
}

TEST_F(FgdScoreTest, ScoreFollowsTheNodeWhenItChanges) {
  EXPECT_EQ(Score(Pod(1000, 1, 200), 0), 50);
  Place(1, 0, 0b10, 700);
  EXPECT_EQ(Score(Pod(1000, 1, 200), 0), 54);
  ASSERT_TRUE(state_->Apply(state::ReleaseTask{{JobId(1), 0}}).ok());
  EXPECT_EQ(Score(Pod(1000, 1, 200), 0), 50);
}

TEST_F(FgdScoreTest, NeedsAWorkload) {
  auto p = registry_.Create("fgd", {}, framework::PluginContext{cluster_.get(), {}});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(FgdScoreTest, RejectsABadCoverage) {
  auto p = registry_.Create("fgd", {{"typical_coverage_percent", "150"}},
                            framework::PluginContext{cluster_.get(), workload_});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(registry_
                  .Create("fgd", {{"typical_coverage_percent", "80"}},
                          framework::PluginContext{cluster_.get(), workload_})
                  .ok());
}

}  // namespace
}  // namespace berth::plugins
