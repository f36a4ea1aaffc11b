// Budgets of the queue tree: how much a queue may spend per period, in the
// tree's unit x hours (GPU-hours, or reference-GPU-hours with `unit:
// normalized`) or in money (a price per GPU type per hour), and what it has
// spent in the current period (docs/queues.md "Budgets", ADR 0022).
//
//   Budgets b(tree);                              // budgets from the tree's queues
//   b.Charge(q, /*unit_milli=*/8000, /*money_micro_per_hour=*/32'000'000, now);
//   b.Spent(q, now);                              // micro-units spent this period
//   int32_t s = b.SpentOnPath(leaf, now);         // first queue up the tree whose budget is spent
//
// A budget counts everything charged to its queue's subtree. Each queue with
// a budget keeps the rate it spends at now (micro per hour: milli-unit x 1000,
// or milli-GPU x price in milli-money per GPU-hour) and the integral of that
// rate over the current period; a start or end of a run changes the rate of
// the queues on its path and nothing else, so Charge is O(depth) and nothing
// is recomputed per pass. The integral is exact (micro per hour x
// microseconds, 128-bit), so an incremental state equals a recomputation
// from the runs' intervals.
//
// Periods: `day`, `week` (from Monday 00:00 UTC), `month` (calendar month,
// UTC) start at the clock's epoch (the simulator's time 0 is 1970-01-01
// 00:00 UTC, a Thursday); a duration (`24h`, `7d`) is a rolling window of
// that length, counted in 24 buckets of window/24: what was spent in the
// current bucket and the 23 before it (so the window is exact to a
// twenty-fourth of its length).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "berth/common/quantity.h"
#include "berth/common/status.h"

namespace berth::tenancy {

enum class BudgetPeriod { kDay, kWeek, kMonth, kRolling };
// What a queue's new work does when its budget is spent: waits for the
// budget to renew, or runs only on idle capacity (never preempting, first to
// be preempted).
enum class WhenSpent { kWait, kIdle };

inline constexpr int32_t kRollingBuckets = 24;

struct BudgetSpec {
  bool money = false;     // false: in the tree's unit x hours
  int64_t amount = 0;     // micro-units (unit-hours or money) per period
  BudgetPeriod period = BudgetPeriod::kDay;
  TimeUs window = 0;      // kRolling: its length
  WhenSpent when_spent = WhenSpent::kWait;
};

// "day", "week", "month", or "rolling 24h".
std::string PeriodName(const BudgetSpec& b);
// "wait" / "idle".
const char* WhenSpentName(WhenSpent w);
// The start of the fixed period holding `t` (day, week from Monday, month).
TimeUs PeriodStart(BudgetPeriod p, TimeUs t);
// The start of the next one.
TimeUs PeriodEnd(BudgetPeriod p, TimeUs t);
// "1970-01-02T00:00:00Z".
std::string FormatUtc(TimeUs t);

class Budgets {
 public:
  Budgets() = default;
  // `parents[q]` is q's parent (-1: top), `budgets[q]` its budget, if any.
  Budgets(std::vector<int32_t> parents, std::vector<std::optional<BudgetSpec>> budgets);
  // After an auto leaf (no budget) was added.
  void AddQueue(int32_t parent);

  bool any() const { return any_; }
  int32_t size() const { return static_cast<int32_t>(parent_.size()); }
  const BudgetSpec* spec(int32_t q) const { return HasState(q) ? &*spec_[q] : nullptr; }

  // A run of queue q starts (positive) or ends (negative): `unit_milli` of the
  // ledger's unit and `money_micro_per_hour` (milli-GPU x price in milli-money
  // per GPU-hour) are added to the rates of the budgeted queues on q's path.
  void Charge(int32_t q, int64_t unit_milli, int64_t money_micro_per_hour, TimeUs now);

  // Micro-units spent by q in its period (or window) as of `now`; 0 without a budget.
  int64_t Spent(int32_t q, TimeUs now) const;
  // Micro-units spent by q since its first charge (all periods).
  int64_t TotalSpent(int32_t q, TimeUs now) const;
  // Micro-units per hour q spends now.
  int64_t Rate(int32_t q) const { return HasState(q) ? state_[q].rate : 0; }
  bool IsSpent(int32_t q, TimeUs now) const;
  // The first queue from `leaf` up whose budget is spent, or -1.
  int32_t SpentOnPath(int32_t leaf, TimeUs now) const;
  // When q's spend next falls (a new period starts; a rolling window's
  // oldest bucket leaves), or -1 without a budget.
  TimeUs NextRenewal(int32_t q, TimeUs now) const;
  // The start of q's current period (window start for a rolling window).
  TimeUs CurrentPeriodStart(int32_t q, TimeUs now) const;

 private:
  struct State {
    int64_t rate = 0;           // micro per hour
    __int128 acc = 0;           // fixed periods: micro/h x us since period_start
    __int128 total = 0;         // micro/h x us since the first charge, up to `last`
    TimeUs last = 0;            // the integral is up to date at `last`
    TimeUs period_start = 0;
    bool started = false;
    std::vector<__int128> bucket;   // rolling: spend per bucket (micro/h x us)
    std::vector<int64_t> bucket_id; // the bucket index (time / width) it holds
  };
  bool HasState(int32_t q) const { return q >= 0 && q < static_cast<int32_t>(spec_.size()) && spec_[q].has_value(); }
  static void AdvanceState(const BudgetSpec& spec, State& s, TimeUs now);
  static __int128 Integral(const BudgetSpec& spec, const State& s, TimeUs now);

  std::vector<int32_t> parent_;
  std::vector<std::optional<BudgetSpec>> spec_;
  std::vector<State> state_;
  bool any_ = false;
};

}  // namespace berth::tenancy
