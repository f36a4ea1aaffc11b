// The autoscaler: HPA's formula and tolerance, stabilization, rate limits,
// scale to zero, and the forecasts of predictive scaling.
#include "berth/workload/autoscaler.h"

#include <gtest/gtest.h>

namespace berth::workload {
namespace {

job::ServiceSpec Spec(int32_t min, int32_t max, int64_t target_milli_rps) {
  job::ServiceSpec s;
  s.replicas = std::max(min, 1);
  s.min_replicas = min;
  s.max_replicas = max;
  s.target_milli_rps = target_milli_rps;
  return s;
}

constexpr TimeUs kS = kUsPerSecond;

TEST(Autoscaler, DesiredIsTheCeilingOfLoadOverTarget) {
  Autoscaler a(Spec(1, 20, 10'000), {});
  a.Observe(0, 45'000);  // 45 rps at 10 rps per replica
  EXPECT_EQ(a.Evaluate(0, 2), 5);
}

TEST(Autoscaler, WithinToleranceKeepsTheCount) {
  Autoscaler a(Spec(1, 20, 10'000), {});
  a.Observe(0, 41'000);  // 4 replicas at 102.5%
  EXPECT_EQ(a.Evaluate(0, 4), 4);
}

TEST(Autoscaler, KeepsTheCountWithoutAnyLoadReport) {
  Autoscaler a(Spec(1, 20, 10'000), {});
  EXPECT_EQ(a.Evaluate(0, 3), 3);
}

TEST(Autoscaler, ScaleDownWaitsForTheStabilizationWindow) {
  AutoscalerOptions o;
  o.down_stabilization = 300 * kS;
  Autoscaler a(Spec(1, 20, 10'000), o);
  a.Observe(0, 80'000);
  EXPECT_EQ(a.Evaluate(0, 8), 8);
  a.Observe(15 * kS, 20'000);
  EXPECT_EQ(a.Evaluate(15 * kS, 8), 8);  // the window still holds 8
  EXPECT_EQ(a.Evaluate(299 * kS, 8), 8);
  EXPECT_EQ(a.Evaluate(316 * kS, 8), 2);  // the 8 left the window
}

TEST(Autoscaler, ScaleUpIsRateLimited) {
  AutoscalerOptions o;
  o.up_pods = 2;
  o.up_percent = 50;
  o.up_period = 60 * kS;
  Autoscaler a(Spec(1, 100, 1'000), o);
  a.Observe(0, 50'000);                 // wants 50
  EXPECT_EQ(a.Evaluate(0, 4), 6);       // 4 + max(2, 50% of 4)
  EXPECT_EQ(a.Evaluate(15 * kS, 6), 6); // the base is still 4 within the period
  EXPECT_EQ(a.Evaluate(61 * kS, 6), 9); // base 6 one period later: + 3
}

TEST(Autoscaler, IdleServiceScalesToZeroAndWakesAtOnce) {
  AutoscalerOptions o;
  o.idle_to_zero = 120 * kS;
  o.down_stabilization = 0;
  Autoscaler a(Spec(0, 10, 10'000), o);
  a.Observe(0, 0);
  EXPECT_EQ(a.Evaluate(0, 3), 1);  // idle, not yet long enough: one stays
  EXPECT_EQ(a.Evaluate(119 * kS, 1), 1);
  EXPECT_EQ(a.Evaluate(120 * kS, 1), 0);
  a.Observe(130 * kS, 500);  // a trickle of load
  EXPECT_EQ(a.Evaluate(135 * kS, 0), 1);
}

TEST(Autoscaler, MinReplicasIsAFloor) {
  AutoscalerOptions o;
  o.down_stabilization = 0;
  Autoscaler a(Spec(3, 10, 10'000), o);
  a.Observe(0, 0);
  EXPECT_EQ(a.Evaluate(1000 * kS, 5), 3);
}

TEST(Autoscaler, PredictiveScalesAheadOfARisingLoad) {
  AutoscalerOptions reactive, predictive;
  predictive.forecast = ForecastKind::kHolt;
  predictive.horizon = 60 * kS;
  Autoscaler r(Spec(1, 100, 10'000), reactive), p(Spec(1, 100, 10'000), predictive);
  int32_t nr = 1, np = 1;
  for (int k = 0; k < 8; ++k) {
    const TimeUs t = k * 15 * kS;
    const int64_t load = 10'000 + k * 10'000;  // +10 rps every 15 s
    r.Observe(t, load);
    p.Observe(t, load);
    nr = r.Evaluate(t, nr);
    np = p.Evaluate(t, np);
  }
  EXPECT_EQ(nr, 8);   // the load now: 80 rps
  EXPECT_GT(np, nr);  // the trend ahead
}

TEST(Forecast, HoltFollowsALinearTrend) {
  Forecaster f(ForecastKind::kHolt, {.alpha = 0.8, .beta = 0.8});
  for (int k = 0; k < 30; ++k) f.Observe(1000 + 100 * k);
  EXPECT_NEAR(static_cast<double>(f.Forecast(5)), 1000 + 100 * 34, 30);
}

TEST(Forecast, SeasonalNaiveRepeatsTheLastSeason) {
  Forecaster f(ForecastKind::kSeasonal, {.season = 4});
  for (int64_t x : {1, 2, 3, 4, 10, 20, 30, 40}) f.Observe(x);
  EXPECT_EQ(f.Forecast(1), 10);
  EXPECT_EQ(f.Forecast(3), 30);
  EXPECT_EQ(f.Forecast(5), 10);
}

TEST(Autoscaler, OptionsAreValidated) {
  AutoscalerOptions o;
  o.period = 0;
  EXPECT_FALSE(o.Validate().ok());
  o = {};
  o.down_percent = 150;
  EXPECT_FALSE(o.Validate().ok());
  EXPECT_TRUE(AutoscalerOptions{}.Validate().ok());
}

}  // namespace
}  // namespace berth::workload
