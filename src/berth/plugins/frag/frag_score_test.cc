// The "berth-frag" score plugin: exact scores, GPU choice for shares, CPU
// stranding, cache invalidation, construction and args.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "berth/framework/registry.h"
#include "berth/plugins/builtin.h"
#include "berth/plugins/fgd/typical_pods.h"
#include "berth/plugins/frag/waste_model.h"
#include "berth/plugins/score/score_test_util.h"

namespace berth::plugins {
namespace {

using berth::plugins::testing::Pod;

// Two nodes of 2 GPUs and 16 cores; the workload: one typical pod of 4 cores
// and half a GPU, so kappa = 8 CPU milli per milli-GPU (16 cores feed 2 GPUs).
class FragScoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster::ClusterBuilder b;
    for (const char* name : {"n0", "n1"}) {
      cluster::NodeSpec n;
      n.name = name;
      n.cpu_milli = 16000;
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
    workload_.assign(10, Pod(4000, 1, 500));
    auto p = registry_.Create("berth-frag", {}, framework::PluginContext{cluster_.get(), workload_});
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
  void Place(int64_t id, int node, uint64_t mask, MilliGpu milli, MilliCpu cpu = 1000) {
    ASSERT_TRUE(state_->Apply(state::PlaceTask{{JobId(id), 0}, {NodeId(node), mask, milli, cpu, 1024}}).ok());
  }

  std::unique_ptr<cluster::Cluster> cluster_;
  std::unique_ptr<state::ClusterState> state_;
  framework::PluginRegistry registry_;
  std::vector<job::JobSpec> workload_;
  std::unique_ptr<framework::Plugin> plugin_;
  framework::ScorePlugin* score_ = nullptr;
  Rng rng_{1};
};

TEST_F(FragScoreTest, ScoreIsTheExactChangeInWasteInThousandthsOfAMilliGpu) {
  // Half a GPU on an idle node: R(500) = R(1000) = 0 and the CPU still feeds
  // what is left: nothing changes.
  EXPECT_EQ(Score(Pod(4000, 1, 500), 0), 0);
  // 700 leaves 300 that the typical pod cannot use: 300 more waste.
  EXPECT_EQ(Score(Pod(4000, 1, 700), 0), -300'000);
  // 200 leaves 800: a typical pod leaves 300 of it, R(300) = 300.
  EXPECT_EQ(Score(Pod(1000, 1, 200), 0), -300'000);
  // The same with 4 cores: 12 cores feed only 1500 of the 1800 left.
  EXPECT_EQ(Score(Pod(4000, 1, 200), 0), -600'000);
  // 250 milli with 12 cores: R(750) = 250 and 4 cores feed only 500 of the
  // 1750 left, stranding 1250: waste 1500.
  EXPECT_EQ(Score(Pod(12000, 1, 250), 0), -1'500'000);
}

TEST_F(FragScoreTest, ShareGoesToTheGpuThatWastesLeast) {
  Place(1, 0, 0b10, 700);  // node 0: GPU 1 has 300 free (waste 300)
  // 300 on GPU 1 removes that waste; on GPU 0 it adds R(700) = 200.
  EXPECT_EQ(Score(Pod(1000, 1, 300), 0), 300'000);
  EXPECT_EQ(Gpus(Pod(1000, 1, 300), 0), uint64_t{0b10});
  // Equal waste: the lowest index.
  EXPECT_EQ(Gpus(Pod(1000, 1, 500), 1), uint64_t{0b01});
  // Whole GPUs: the scheduler's default.
  EXPECT_EQ(Gpus(Pod(1000, 1, 1000), 1), std::nullopt);
}

TEST_F(FragScoreTest, CpuOnlyTaskGoesWhereItsCpuStrandsNoGpu) {
  // Node 0: both GPUs taken, 14 cores idle. Node 1: idle, its 16 cores feed
  // its 2 GPUs at kappa = 8.
  Place(1, 0, 0b11, 1000, 2000);
  EXPECT_EQ(Score(Pod(8000, 0, kMilliPerGpu), 0), 0);
  // On node 1 the 8 cores left feed only 1000 milli: 1000 stranded.
  EXPECT_EQ(Score(Pod(8000, 0, kMilliPerGpu), 1), -1'000'000);
}

TEST_F(FragScoreTest, ScoreFollowsTheNodeWhenItChanges) {
  EXPECT_EQ(Score(Pod(1000, 1, 300), 0), -200'000);
  Place(1, 0, 0b10, 700);
  EXPECT_EQ(Score(Pod(1000, 1, 300), 0), 300'000);
  ASSERT_TRUE(state_->Apply(state::ReleaseTask{{JobId(1), 0}}).ok());
  EXPECT_EQ(Score(Pod(1000, 1, 300), 0), -200'000);
}

TEST_F(FragScoreTest, ArgsSwitchThePartsOff) {
  // Without the CPU term, the CPU-only task scores the same on both nodes.
  auto p = registry_.Create("berth-frag", {{"cpu_weight", "0"}},
                            framework::PluginContext{cluster_.get(), workload_});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto* s = dynamic_cast<framework::ScorePlugin*>(p.value().get());
  Place(1, 0, 0b11, 1000, 2000);
  const job::JobSpec cpu_only = Pod(8000, 0, kMilliPerGpu);
  framework::CycleContext ctx{*state_, cpu_only, 0, 0, rng_, 0, {}};
  const auto req = framework::TaskRequest::FromGroup(cpu_only.groups[0]);
  EXPECT_EQ(s->Score(ctx, req, NodeId(0)), s->Score(ctx, req, NodeId(1)));
  // Without look-ahead, a GPU a typical pod fits counts as usable (as FGD).
  auto q = registry_.Create("berth-frag", {{"lookahead", "false"}},
                            framework::PluginContext{cluster_.get(), workload_});
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  auto* t = dynamic_cast<framework::ScorePlugin*>(q.value().get());
  const job::JobSpec share = Pod(1000, 1, 200);
  framework::CycleContext ctx2{*state_, share, 0, 0, rng_, 0, {}};
  EXPECT_EQ(t->Score(ctx2, framework::TaskRequest::FromGroup(share.groups[0]), NodeId(1)), 0);
}

TEST_F(FragScoreTest, RejectsBadArgs) {
  const framework::PluginContext ctx{cluster_.get(), workload_};
  for (const framework::PluginArgs& args :
       {framework::PluginArgs{{"typical_coverage_percent", "0"}}, framework::PluginArgs{{"lookahead", "yes"}},
        framework::PluginArgs{{"cpu_weight", "-1"}}, framework::PluginArgs{{"cpu_weight", "nan"}},
        framework::PluginArgs{{"cpu_wieght", "1"}}}) {
    auto p = registry_.Create("berth-frag", args, ctx);
    ASSERT_FALSE(p.ok()) << args.begin()->first;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST_F(FragScoreTest, NeedsAWorkload) {
  auto p = registry_.Create("berth-frag", {}, framework::PluginContext{cluster_.get(), {}});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace berth::plugins
