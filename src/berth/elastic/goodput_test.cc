// Tests of the throughput fit and the goodput model: synthetic data with known
// parameters, and Pollux's profiles when the shared data folder is present.
#include "berth/elastic/goodput.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

namespace berth::elastic {
namespace {

std::string AppsDir() {
  const char* env = std::getenv("BERTH_DATA_DIR");
  return std::string(env ? env : BERTH_DATA_DIR) + "/pollux-philly/apps";
}

TEST(ThroughputFit, RecoversKnownParameters) {
  ThroughputParams truth;
  truth.alpha_grad = 0.05;
  truth.beta_grad = 0.002;
  truth.alpha_local = 0.01;
  truth.beta_local = 0.001;
  truth.alpha_node = 0.2;
  truth.beta_node = 0.01;
  truth.gamma = 1.8;
  std::vector<StepSample> steps;
  for (int nodes : {1, 2, 4})
    for (int per : {1, 2, 4})
      for (int local : {16, 32, 64, 128}) {
        StepSample s{nodes, nodes * per, local, 0, 0};
        s.step_time_s = truth.IterTime(s.gpus, s.nodes, local);
        steps.push_back(s);
      }
  const ThroughputFit f = FitThroughput(steps);
  EXPECT_LT(f.rmsle, 0.02);
  EXPECT_LT(f.max_abs_rel_error, 0.05);
  EXPECT_EQ(f.samples, static_cast<int32_t>(steps.size()));
}

TEST(ThroughputModel, SingleGpuHasNoSync) {
  ThroughputParams p;
  EXPECT_DOUBLE_EQ(p.IterTime(1, 1, 10), p.alpha_grad + p.beta_grad * 10);
  EXPECT_GT(p.IterTime(8, 2, 10), p.IterTime(8, 1, 10));  // across nodes costs more (defaults)
}

class PolluxApps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(AppsDir())) GTEST_SKIP() << "no " << AppsDir();
    auto c = LoadGoodputCatalog(AppsDir());
    ASSERT_TRUE(c.ok()) << c.status().message();
    cat_ = *c;
  }
  std::shared_ptr<const GoodputCatalog> cat_;
};

TEST_F(PolluxApps, FitsEveryApplicationWithinStatedError) {
  ASSERT_EQ(cat_->all().size(), 6u);
  for (const auto& [name, m] : cat_->all()) {
    SCOPED_TRACE(name);
    EXPECT_GT(m->fit().samples, 100);
    // docs/results/pollux.md gives the per-application figures.
    EXPECT_LT(m->fit().rmsle, 0.25);
    EXPECT_GT(m->target(), 0);
    const ThroughputParams& p = m->fit().params;
    std::printf("%-12s samples %4d rmsle %.3f mean |err| %.1f%% max %.1f%%  grad %.4g+%.4g*m  local %.4g+%.4g*(K-2)  "
                "node %.4g+%.4g*(K-2)  gamma %.2f\n",
                name.c_str(), m->fit().samples, m->fit().rmsle, 100 * m->fit().mean_abs_rel_error,
                100 * m->fit().max_abs_rel_error, p.alpha_grad, p.beta_grad, p.alpha_local, p.beta_local, p.alpha_node,
                p.beta_node, p.gamma);
  }
}

TEST_F(PolluxApps, EfficiencyMatchesTheValidationProgress) {
  // cifar10 at batch 1024: progress per iteration between two validation
  // points equals (M / M0) * E(M) with the noise scale at the later point.
  const GoodputModel* m = cat_->Find("cifar10");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->app().base_batch, 128);
  const double e = m->Efficiency(1024, 19532);
  EXPECT_GT(e, 0.85);
  EXPECT_LT(e, 1.0);
  EXPECT_DOUBLE_EQ(m->Efficiency(128, 1000), 1.0);
  // Early in training big batches waste samples.
  EXPECT_LT(m->Efficiency(4096, 400), 0.2);
}

TEST_F(PolluxApps, FinishTimeAndProgressAgree) {
  const GoodputModel* m = cat_->Find("imagenet");
  ASSERT_NE(m, nullptr);
  const int32_t batch = m->BestBatch(16, 4, 0);
  ASSERT_GT(batch, 0);
  const double total = m->SecondsToFinish(0, 16, 4, batch);
  EXPECT_GT(total, 0);
  const double half = m->ProgressAfter(0, 16, 4, batch, total / 2);
  EXPECT_NEAR(m->SecondsToFinish(half, 16, 4, batch), total / 2, total * 1e-6);
  EXPECT_DOUBLE_EQ(m->ProgressAfter(0, 16, 4, batch, total * 2), m->target());
  // More GPUs finish sooner at their best batch.
  EXPECT_LT(m->SecondsToFinish(0, 16, 4, m->BestBatch(16, 4, 0)), m->SecondsToFinish(0, 4, 1, m->BestBatch(4, 1, 0)));
}

TEST(AppProfile, BadFolderIsAnError) {
  EXPECT_FALSE(LoadAppProfile("/nonexistent/app").ok());
}

}  // namespace
}  // namespace berth::elastic
