// Runtime predictor: limits first, quantiles of the history, fallbacks from
// the narrowest key to the default, bounded windows, never the true duration.
#include "berth/plugins/backfill/runtime_predictor.h"

#include <gtest/gtest.h>

namespace berth::plugins::backfill {
namespace {

using Source = RuntimePredictor::Source;

constexpr TimeUs kMin = 60 * kUsPerSecond;

job::JobSpec Job(std::string tenant, std::string queue, int32_t gpus, int32_t count = 1) {
  job::JobSpec j;
  j.tenant = std::move(tenant);
  j.queue = std::move(queue);
  job::TaskGroup g;
  g.gpus = gpus;
  g.count = count;
  j.groups.push_back(g);
  return j;
}

RuntimePredictorOptions Options(double quantile = 0.9, int32_t window = 128, int32_t min_samples = 3) {
  RuntimePredictorOptions o;
  o.quantile = quantile;
  o.window = window;
  o.min_samples = min_samples;
  o.default_runtime = 1000 * kMin;
  return o;
}

TEST(RuntimePredictor, LimitWinsOverHistory) {
  RuntimePredictor p(Options());
  job::JobSpec j = Job("alice", "research", 8);
  for (int i = 0; i < 5; ++i) p.Learn(j, 10 * kMin);
  j.runtime_limit = 90 * kMin;
  const auto x = p.Predict(j);
  EXPECT_EQ(x.runtime, 90 * kMin);
  EXPECT_EQ(x.source, Source::kLimit);
}

TEST(RuntimePredictor, NeverReadsTheTrueDuration) {
  RuntimePredictor p(Options());
  job::JobSpec j = Job("alice", "research", 8);
  j.duration = 5 * kMin;
  const auto x = p.Predict(j);
  EXPECT_EQ(x.runtime, 1000 * kMin);
  EXPECT_EQ(x.source, Source::kDefault);
  p.Learn(j, 7 * kMin);  // what the run took, not j.duration
  p.Learn(j, 7 * kMin);
  p.Learn(j, 7 * kMin);
  EXPECT_EQ(p.Predict(j).runtime, 7 * kMin);
}

TEST(RuntimePredictor, NearestRankQuantile) {
  for (auto [q, expect] : {std::pair{0.9, 9}, {0.5, 5}, {1.0, 10}, {0.05, 1}, {0.91, 10}}) {
    RuntimePredictor p(Options(q));
    const job::JobSpec j = Job("alice", "research", 4);
    for (int m : {7, 3, 10, 1, 5, 9, 2, 8, 6, 4}) p.Learn(j, m * kMin);
    EXPECT_EQ(p.Predict(j).runtime, expect * kMin) << "quantile " << q;
  }
}

TEST(RuntimePredictor, FallsBackFromTenantToQueueToGpusToAllToDefault) {
  RuntimePredictor p(Options(1.0, 128, 3));
  const job::JobSpec alice = Job("alice", "research", 8);
  const job::JobSpec bob = Job("bob", "research", 8);    // same queue and GPUs, other tenant
  const job::JobSpec carol = Job("carol", "prod", 8);    // other queue, same GPUs
  const job::JobSpec dave = Job("dave", "prod", 2);      // other GPU count
  EXPECT_EQ(p.Predict(alice).source, Source::kDefault);

  for (int i = 0; i < 3; ++i) p.Learn(alice, 30 * kMin);
  EXPECT_EQ(p.Predict(alice).source, Source::kTenantQueueGpus);
  EXPECT_EQ(p.Predict(bob).source, Source::kQueueGpus);
  EXPECT_EQ(p.Predict(bob).runtime, 30 * kMin);
  EXPECT_EQ(p.Predict(carol).source, Source::kGpus);
  EXPECT_EQ(p.Predict(dave).source, Source::kGlobal);
  EXPECT_EQ(p.Predict(dave).runtime, 30 * kMin);

  // Two runs of bob's own are not enough (min_samples 3): the queue's history
  // (alice's three and bob's two, max with quantile 1) answers.
  p.Learn(bob, 50 * kMin);
  p.Learn(bob, 50 * kMin);
  EXPECT_EQ(p.Predict(bob).source, Source::kQueueGpus);
  EXPECT_EQ(p.Predict(bob).runtime, 50 * kMin);
  p.Learn(bob, 40 * kMin);
  EXPECT_EQ(p.Predict(bob).source, Source::kTenantQueueGpus);
  EXPECT_EQ(p.Predict(bob).runtime, 50 * kMin);
  EXPECT_EQ(p.Predict(alice).runtime, 30 * kMin);  // alice's own history is unchanged
  EXPECT_EQ(p.samples_learned(), 6);
}

TEST(RuntimePredictor, WindowKeepsTheRecentRuns) {
  RuntimePredictor p(Options(1.0, 4, 1));
  const job::JobSpec j = Job("alice", "", 1);
  for (int i = 0; i < 4; ++i) p.Learn(j, 100 * kMin);
  EXPECT_EQ(p.Predict(j).runtime, 100 * kMin);
  for (int i = 0; i < 3; ++i) p.Learn(j, 5 * kMin);
  EXPECT_EQ(p.Predict(j).runtime, 100 * kMin);  // one old run is left
  p.Learn(j, 6 * kMin);
  EXPECT_EQ(p.Predict(j).runtime, 6 * kMin);
}

TEST(RuntimePredictor, TotalGpusKeyTheHistory) {
  RuntimePredictor p(Options(1.0, 16, 1));
  p.Learn(Job("a", "q", 8, 2), 10 * kMin);  // 16 GPUs
  p.Learn(Job("a", "q", 8, 1), 20 * kMin);  // 8 GPUs
  EXPECT_EQ(p.Predict(Job("a", "q", 4, 4)).runtime, 10 * kMin);  // 16 GPUs as 4 x 4
  EXPECT_EQ(p.Predict(Job("a", "q", 8)).runtime, 20 * kMin);
}

TEST(RuntimePredictorOptions, Args) {
  auto o = RuntimePredictorOptions::FromArgs({{"quantile", "0.75"}, {"window", "50"}, {"min_samples", "5"},
                                              {"default_runtime_s", "3600"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_DOUBLE_EQ(o->quantile, 0.75);
  EXPECT_EQ(o->window, 50);
  EXPECT_EQ(o->min_samples, 5);
  EXPECT_EQ(o->default_runtime, 3600 * kUsPerSecond);
  EXPECT_FALSE(RuntimePredictorOptions::FromArgs({{"quantile", "0"}}).ok());
  EXPECT_FALSE(RuntimePredictorOptions::FromArgs({{"quantile", "x"}}).ok());
  EXPECT_FALSE(RuntimePredictorOptions::FromArgs({{"window", "2.5"}}).ok());
  EXPECT_FALSE(RuntimePredictorOptions::FromArgs({{"window", "4"}, {"min_samples", "5"}}).ok());
  EXPECT_FALSE(RuntimePredictorOptions::FromArgs({{"default_runtime_s", "-1"}}).ok());
}

}  // namespace
}  // namespace berth::plugins::backfill
