// Downsampling keeps the ends, the extremes and the order; it bounds size.
#include "berth/sim/report/downsample.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace berth::sim {
namespace {

std::vector<Point> Ramp(int n) {
  std::vector<Point> v;
  for (int i = 0; i < n; ++i) v.push_back({static_cast<double>(i), std::sin(i * 0.01)});
  return v;
}

TEST(Downsample, ShortInputUnchanged) {
  const auto v = Ramp(10);
  const auto d = Downsample(v, 1000);
  ASSERT_EQ(d.size(), v.size());
  EXPECT_TRUE(Downsample(std::vector<Point>{}, 10).empty());
}

TEST(Downsample, BoundedOrderedKeepsEndsAndExtremes) {
  auto v = Ramp(100000);
  v[54321].y = 50;   // a spike
  v[12345].y = -50;  // a dip
  const auto d = Downsample(v, 1000);
  EXPECT_LE(d.size(), 1000u);
  EXPECT_GE(d.size(), 900u);
  EXPECT_EQ(d.front().x, 0);
  EXPECT_EQ(d.back().x, 99999);
  for (size_t i = 1; i < d.size(); ++i) EXPECT_LT(d[i - 1].x, d[i].x);
  bool spike = false, dip = false;
  for (const auto& p : d) {
    spike |= p.y == 50;
    dip |= p.y == -50;
  }
  EXPECT_TRUE(spike);
  EXPECT_TRUE(dip);
}

TEST(Downsample, TinyBudget) {
  const auto v = Ramp(100);
  for (size_t budget : {0u, 1u, 2u, 3u, 4u, 5u}) {
    const auto d = Downsample(v, budget);
    EXPECT_LE(d.size(), std::max<size_t>(budget, 2));
    EXPECT_EQ(d.front().x, 0);
    EXPECT_EQ(d.back().x, 99);
  }
}

TEST(Downsample, NonFiniteBecomesABreak) {
  auto v = Ramp(10000);
  v[5000].y = std::numeric_limits<double>::quiet_NaN();
  const auto d = Downsample(v, 600);
  EXPECT_LE(d.size(), 600u);
  size_t nans = 0;
  for (const auto& p : d) nans += std::isnan(p.y);
  EXPECT_EQ(nans, 1u);
  EXPECT_EQ(FinitePoints(d).size(), d.size() - 1);
}

}  // namespace
}  // namespace berth::sim
