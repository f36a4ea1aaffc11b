// Budgets: period boundaries, spend figures, and randomized runs where the
// incremental spend of every budgeted queue equals a recomputation from the
// runs' intervals (exact integers), for each kind of period.
#include "berth/tenancy/budget.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "berth/common/rng.h"

namespace berth::tenancy {
namespace {

constexpr TimeUs H = 3600 * kUsPerSecond;
constexpr TimeUs D = 24 * H;

TEST(BudgetPeriods, StartsAndEnds) {
  EXPECT_EQ(PeriodStart(BudgetPeriod::kDay, 30 * H), D);
  EXPECT_EQ(PeriodEnd(BudgetPeriod::kDay, 30 * H), 2 * D);
  // 1970-01-01 was a Thursday: its week began on Monday 1969-12-29.
  EXPECT_EQ(PeriodStart(BudgetPeriod::kWeek, 0), -3 * D);
  EXPECT_EQ(PeriodStart(BudgetPeriod::kWeek, 5 * D), 4 * D);
  EXPECT_EQ(PeriodEnd(BudgetPeriod::kWeek, 5 * D), 11 * D);
  EXPECT_EQ(PeriodStart(BudgetPeriod::kMonth, 40 * D), 31 * D);  // February 1970
  EXPECT_EQ(PeriodEnd(BudgetPeriod::kMonth, 40 * D), 59 * D);     // March 1970
  EXPECT_EQ(FormatUtc(59 * D + 90 * kUsPerSecond), "1970-03-01T00:01:30Z");
  EXPECT_EQ(FormatUtc(PeriodStart(BudgetPeriod::kMonth, SecondsToUs(1'772'409'600.0))), "2026-03-01T00:00:00Z");
}

TEST(Budgets, DailySpendRenewsAtMidnight) {
  BudgetSpec day{.money = false, .amount = 100'000'000, .period = BudgetPeriod::kDay};
  Budgets b({-1, 0}, {day, std::nullopt});
  b.Charge(1, 8000, 0, 0);  // 8 GPUs on the child: the parent's budget counts them
  EXPECT_EQ(b.Spent(0, 10 * H), 80'000'000);
  EXPECT_FALSE(b.IsSpent(0, 12 * H));
  EXPECT_TRUE(b.IsSpent(0, 12 * H + 30 * 60 * kUsPerSecond));
  EXPECT_EQ(b.SpentOnPath(1, 13 * H), 0);
  EXPECT_EQ(b.NextRenewal(0, 13 * H), D);
  EXPECT_EQ(b.Spent(0, 30 * H), 48'000'000);  // 6 h of the next day
  b.Charge(1, -8000, 0, 31 * H);
  EXPECT_EQ(b.Spent(0, 40 * H), 56'000'000);
  EXPECT_EQ(b.Rate(0), 0);
}

TEST(Budgets, RollingWindowForgetsOldSpend) {
  BudgetSpec roll{.money = true, .amount = 1'000'000'000, .period = BudgetPeriod::kRolling, .window = 24 * H};
  Budgets b({-1}, {roll});
  b.Charge(0, 0, 4'000'000, 0);   // 4 money per hour
  b.Charge(0, 0, -4'000'000, 2 * H);
  EXPECT_EQ(b.Spent(0, 10 * H), 8'000'000);
  // At 24h30m the window holds buckets 1..24 (1h..24h30m): the first hour's spend left it.
  EXPECT_EQ(b.Spent(0, 24 * H + H / 2), 4'000'000);
  EXPECT_EQ(b.NextRenewal(0, 24 * H + H / 2), 25 * H);
  EXPECT_EQ(b.Spent(0, 25 * H), 0);
}

// Runs of random rates on random queues; spend recomputed from intervals.
TEST(Budgets, IncrementalEqualsRecompute) {
  Rng rng(17);
  for (int trial = 0; trial < 40; ++trial) {
    const int32_t n = 2 + static_cast<int32_t>(rng.Uniform(6));
    std::vector<int32_t> parent(n, -1);
    std::vector<std::optional<BudgetSpec>> spec(n);
    for (int32_t q = 1; q < n; ++q) parent[q] = rng.Uniform(3) == 0 ? -1 : static_cast<int32_t>(rng.Uniform(q));
    for (int32_t q = 0; q < n; ++q) {
      if (rng.Uniform(4) == 0) continue;
      BudgetSpec s;
      s.money = rng.Uniform(2) == 0;
      s.amount = static_cast<int64_t>(rng.Uniform(1000)) * 1'000'000;
      s.period = static_cast<BudgetPeriod>(rng.Uniform(4));
      if (s.period == BudgetPeriod::kRolling) s.window = (1 + static_cast<TimeUs>(rng.Uniform(72))) * H;
      spec[q] = s;
    }
    Budgets b(parent, spec);
    struct Run {
      int32_t q;
      int64_t unit, money;
      TimeUs start, end;  // end -1: running
    };
    std::vector<Run> runs;
    TimeUs now = static_cast<TimeUs>(rng.Uniform(40)) * D;
    for (int step = 0; step < 300; ++step) {
      now += static_cast<TimeUs>(rng.Uniform(static_cast<uint64_t>(20 * H)));
      std::vector<size_t> open;
      for (size_t i = 0; i < runs.size(); ++i)
        if (runs[i].end < 0) open.push_back(i);
      if (!open.empty() && rng.Uniform(2) == 0) {
        Run& r = runs[open[rng.Uniform(open.size())]];
        r.end = now;
        b.Charge(r.q, -r.unit, -r.money, now);
      } else {
        Run r{static_cast<int32_t>(rng.Uniform(n)), 1 + static_cast<int64_t>(rng.Uniform(64'000)),
              static_cast<int64_t>(rng.Uniform(64'000)) * 4000, now, -1};
        b.Charge(r.q, r.unit, r.money, now);
        runs.push_back(r);
      }
      const TimeUs at = now + static_cast<TimeUs>(rng.Uniform(static_cast<uint64_t>(3 * D)));
      for (int32_t q = 0; q < n; ++q) {
        if (!spec[q]) {
          EXPECT_EQ(b.Spent(q, at), 0);
          continue;
        }
        const TimeUs from = b.CurrentPeriodStart(q, at);
        __int128 sum = 0;
        for (const Run& r : runs) {
          bool under = false;
          for (int32_t a = r.q; a >= 0; a = parent[a]) under = under || a == q;
          if (!under) continue;
          const TimeUs lo = std::max(r.start, from), hi = r.end < 0 ? at : std::min(r.end, at);
          if (hi > lo) sum += static_cast<__int128>(spec[q]->money ? r.money : r.unit * 1000) * (hi - lo);
        }
        const auto want = static_cast<int64_t>(sum / (static_cast<__int128>(H)));
        ASSERT_EQ(b.Spent(q, at), want) << "trial " << trial << " step " << step << " queue " << q;
        ASSERT_EQ(b.IsSpent(q, at), sum >= static_cast<__int128>(spec[q]->amount) * H);
      }
    }
  }
}

}  // namespace
}  // namespace berth::tenancy
