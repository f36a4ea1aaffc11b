#include "berth/hetero/throughput.h"

#include <gtest/gtest.h>

#include "berth/hetero/hetero_test_util.h"
#include "berth/hetero/online.h"

namespace berth::hetero {
namespace {

TEST(ThroughputTest, LoadsGavelTable) {
  const MeasuredTable& t = testutil::GavelTable();
  EXPECT_EQ(t.Classes().size(), 83u);
  EXPECT_EQ(t.Types(), (std::vector<std::string>{"K80", "P100", "V100-16"}));
  JobClass r50{"ResNet-50 (batch size 64)", 1};
  EXPECT_NEAR(*t.Get(r50, "V100-16", true), 4.395, 1e-3);
  EXPECT_NEAR(*t.Get(r50, "K80", true), 0.619, 1e-3);
  JobClass tr{"Transformer (batch size 128)", 4};
  EXPECT_NEAR(*t.Get(tr, "V100-16", false), 7.784, 1e-3);
}

TEST(ThroughputTest, MeasuredWinsAndUnmeasuredTypesAreEstimated) {
  auto m = ThroughputModel::Fit(testutil::RepoCatalog(), testutil::GavelTable());
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->pivot(), "V100-16");
  JobClass r50{"ResNet-50 (batch size 64)", 1};
  Estimate v = m->Throughput(r50, "V100");
  EXPECT_EQ(v.source, Source::kMeasured);
  Estimate h = m->Throughput(r50, "H100");
  EXPECT_EQ(h.source, Source::kSpecsOnly);
  EXPECT_GT(h.steps_per_s, v.steps_per_s);  // H100 is faster than V100 on every mix
  Estimate t4 = m->Throughput(r50, "T4");
  EXPECT_LT(t4.steps_per_s, v.steps_per_s);
  // Relative speeds are consistent.
  EXPECT_NEAR(m->Relative(r50, "H100", "H100"), 1.0, 1e-12);
  EXPECT_NEAR(m->Relative(r50, "K80", "V100"), 0.619 / 4.395, 1e-3);
  // A class never measured still has relative speeds from specs.
  JobClass llm{"my-llm", 8};
  EXPECT_EQ(m->Throughput(llm, "H100").source, Source::kUnknown);
  EXPECT_GT(m->Relative(llm, "H100", "V100"), 1.0);
  EXPECT_LT(m->fit_rmse_log(), 1.0);
}

TEST(ThroughputTest, HeldOutPairsArePredictedWithinReason) {
  FitOptions o;
  o.iterations = 15;
  auto rep = EvaluateHeldOut(testutil::RepoCatalog(), testutil::GavelTable(), false, o);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  EXPECT_GT(rep->rows.size(), 200u);
  EXPECT_LT(rep->median_abs_pct_error, 60.0);  // a loose bound: the figure itself goes in docs/results
}

TEST(OnlineThroughputTest, ObservationsPullTheEstimate) {
  auto m = ThroughputModel::Fit(testutil::RepoCatalog(), testutil::GavelTable());
  ASSERT_TRUE(m.ok());
  OnlineThroughput on(*m, 600);
  JobClass r50{"ResNet-50 (batch size 64)", 1};
  const double prior = m->Throughput(r50, "V100").steps_per_s;
  const double prior_h = m->Throughput(r50, "H100").steps_per_s;
  on.Observe(r50, "V100", true, 0.5 * prior * 1800, 1800);  // ran at half speed for 30 min
  const double post = on.Throughput(r50, "V100").steps_per_s;
  EXPECT_NEAR(post, (prior * 600 + 0.5 * prior * 1800) / 2400, 1e-9);
  EXPECT_NEAR(on.Correction(r50), (600 + 900.0) / 2400, 1e-9);
  EXPECT_NEAR(on.Throughput(r50, "H100").steps_per_s, prior_h * on.Correction(r50), 1e-9);
  // Other classes are untouched.
  JobClass r18{"ResNet-18 (batch size 64)", 1};
  EXPECT_DOUBLE_EQ(on.Throughput(r18, "V100").steps_per_s, m->Throughput(r18, "V100").steps_per_s);
}

}  // namespace
}  // namespace berth::hetero
