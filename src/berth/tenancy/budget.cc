// Budget periods and the incremental spend of each budgeted queue.
#include "berth/tenancy/budget.h"

#include <algorithm>
#include <cstdio>

namespace berth::tenancy {
namespace {

constexpr TimeUs kUsPerDay = 86'400 * kUsPerSecond;
constexpr __int128 kUsPerHour = 3'600 * kUsPerSecond;

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// Days since 1970-01-01 <-> civil date (proleptic Gregorian).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = FloorDiv(y, 400);
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void CivilFromDays(int64_t z, int64_t& y, int64_t& m, int64_t& d) {
  z += 719468;
  const int64_t era = FloorDiv(z, 146097);
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y = yoe + era * 400 + (m <= 2);
}

TimeUs Width(const BudgetSpec& b) { return std::max<TimeUs>(1, b.window / kRollingBuckets); }

}  // namespace

std::string PeriodName(const BudgetSpec& b) {
  switch (b.period) {
    case BudgetPeriod::kDay: return "day";
    case BudgetPeriod::kWeek: return "week";
    case BudgetPeriod::kMonth: return "month";
    case BudgetPeriod::kRolling: break;
  }
  const TimeUs s = b.window / kUsPerSecond;
  std::string w = s % 86400 == 0 ? std::to_string(s / 86400) + "d"
                  : s % 3600 == 0 ? std::to_string(s / 3600) + "h"
                                  : std::to_string(s) + "s";
  return "rolling " + w;
}

const char* WhenSpentName(WhenSpent w) { return w == WhenSpent::kIdle ? "idle" : "wait"; }

TimeUs PeriodStart(BudgetPeriod p, TimeUs t) {
  const int64_t day = FloorDiv(t, kUsPerDay);
  switch (p) {
    case BudgetPeriod::kDay: return day * kUsPerDay;
    case BudgetPeriod::kWeek: return (FloorDiv(day - 4, 7) * 7 + 4) * kUsPerDay;  // 1970-01-05 was a Monday
    case BudgetPeriod::kMonth: {
      int64_t y = 0, m = 0, d = 0;
      CivilFromDays(day, y, m, d);
      return DaysFromCivil(y, m, 1) * kUsPerDay;
    }
    case BudgetPeriod::kRolling: break;
  }
  return t;
}

TimeUs PeriodEnd(BudgetPeriod p, TimeUs t) {
  const TimeUs start = PeriodStart(p, t);
  switch (p) {
    case BudgetPeriod::kDay: return start + kUsPerDay;
    case BudgetPeriod::kWeek: return start + 7 * kUsPerDay;
    case BudgetPeriod::kMonth: {
      int64_t y = 0, m = 0, d = 0;
      CivilFromDays(FloorDiv(start, kUsPerDay), y, m, d);
      return (m == 12 ? DaysFromCivil(y + 1, 1, 1) : DaysFromCivil(y, m + 1, 1)) * kUsPerDay;
    }
    case BudgetPeriod::kRolling: break;
  }
  return t;
}

std::string FormatUtc(TimeUs t) {
  const int64_t day = FloorDiv(t, kUsPerDay);
  const int64_t sec = (t - day * kUsPerDay) / kUsPerSecond;
  int64_t y = 0, m = 0, d = 0;
  CivilFromDays(day, y, m, d);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ", static_cast<long long>(y),
                static_cast<long long>(m), static_cast<long long>(d), static_cast<long long>(sec / 3600),
                static_cast<long long>(sec / 60 % 60), static_cast<long long>(sec % 60));
  return buf;
}

Budgets::Budgets(std::vector<int32_t> parents, std::vector<std::optional<BudgetSpec>> budgets)
    : parent_(std::move(parents)), spec_(std::move(budgets)) {
  spec_.resize(parent_.size());
  state_.resize(parent_.size());
  for (size_t q = 0; q < spec_.size(); ++q) {
    if (!spec_[q]) continue;
    any_ = true;
    if (spec_[q]->period == BudgetPeriod::kRolling) {
      state_[q].bucket.assign(kRollingBuckets, 0);
      state_[q].bucket_id.assign(kRollingBuckets, -1);
    }
  }
}

void Budgets::AddQueue(int32_t parent) {
  parent_.push_back(parent);
  spec_.emplace_back();
  state_.emplace_back();
}

void Budgets::AdvanceState(const BudgetSpec& spec, State& s, TimeUs now) {
  if (!s.started) {
    s.started = true;
    s.last = now;
    s.period_start = spec.period == BudgetPeriod::kRolling ? now : PeriodStart(spec.period, now);
    return;
  }
  if (now <= s.last) return;
  s.total += static_cast<__int128>(s.rate) * (now - s.last);
  if (spec.period != BudgetPeriod::kRolling) {
    if (now >= PeriodEnd(spec.period, s.period_start)) {
      s.period_start = PeriodStart(spec.period, now);
      s.acc = static_cast<__int128>(s.rate) * (now - s.period_start);
    } else {
      s.acc += static_cast<__int128>(s.rate) * (now - s.last);
    }
    s.last = now;
    return;
  }
  const TimeUs w = Width(spec);
  const int64_t k_now = FloorDiv(now, w);
  TimeUs t = std::max(s.last, (k_now - kRollingBuckets) * w);  // older buckets leave the window anyway
  while (t < now) {
    const int64_t k = FloorDiv(t, w);
    const TimeUs end = std::min(now, (k + 1) * w);
    const auto slot = static_cast<size_t>(k % kRollingBuckets);
    if (s.bucket_id[slot] != k) {
      s.bucket_id[slot] = k;
      s.bucket[slot] = 0;
    }
    s.bucket[slot] += static_cast<__int128>(s.rate) * (end - t);
    t = end;
  }
  s.last = now;
}

__int128 Budgets::Integral(const BudgetSpec& spec, const State& s, TimeUs now) {
  if (!s.started) return 0;
  now = std::max(now, s.last);
  if (spec.period != BudgetPeriod::kRolling) {
    if (now >= PeriodEnd(spec.period, s.period_start))
      return static_cast<__int128>(s.rate) * (now - PeriodStart(spec.period, now));
    return s.acc + static_cast<__int128>(s.rate) * (now - s.last);
  }
  // The buckets hold what was spent up to `last`; from there the rate runs on.
  const TimeUs w = Width(spec);
  const int64_t k_now = FloorDiv(now, w);
  const int64_t oldest = k_now - (kRollingBuckets - 1);
  __int128 sum = 0;
  for (size_t i = 0; i < s.bucket.size(); ++i)
    if (s.bucket_id[i] >= oldest && s.bucket_id[i] <= k_now) sum += s.bucket[i];
  const TimeUs from = std::max(s.last, oldest * w);
  if (now > from) sum += static_cast<__int128>(s.rate) * (now - from);
  return sum;
}

void Budgets::Charge(int32_t q, int64_t unit_milli, int64_t money_micro_per_hour, TimeUs now) {
  if (!any_) return;
  for (int32_t a = q; a >= 0 && a < static_cast<int32_t>(spec_.size()); a = parent_[a]) {
    if (!spec_[a]) continue;
    State& s = state_[a];
    AdvanceState(*spec_[a], s, now);
    s.rate += spec_[a]->money ? money_micro_per_hour : unit_milli * 1000;
  }
}

int64_t Budgets::Spent(int32_t q, TimeUs now) const {
  if (!HasState(q)) return 0;
  return static_cast<int64_t>(Integral(*spec_[q], state_[q], now) / kUsPerHour);
}

int64_t Budgets::TotalSpent(int32_t q, TimeUs now) const {
  if (!HasState(q) || !state_[q].started) return 0;
  const State& s = state_[q];
  return static_cast<int64_t>((s.total + static_cast<__int128>(s.rate) * std::max<TimeUs>(0, now - s.last)) / kUsPerHour);
}

bool Budgets::IsSpent(int32_t q, TimeUs now) const {
  if (!HasState(q)) return false;
  return Integral(*spec_[q], state_[q], now) >= static_cast<__int128>(spec_[q]->amount) * kUsPerHour;
}

int32_t Budgets::SpentOnPath(int32_t leaf, TimeUs now) const {
  if (!any_) return -1;
  for (int32_t a = leaf; a >= 0 && a < static_cast<int32_t>(spec_.size()); a = parent_[a])
    if (IsSpent(a, now)) return a;
  return -1;
}

TimeUs Budgets::NextRenewal(int32_t q, TimeUs now) const {
  if (!HasState(q)) return -1;
  const BudgetSpec& b = *spec_[q];
  if (b.period != BudgetPeriod::kRolling) return PeriodEnd(b.period, now);
  const TimeUs w = Width(b);
  return (FloorDiv(now, w) + 1) * w;
}

TimeUs Budgets::CurrentPeriodStart(int32_t q, TimeUs now) const {
  if (!HasState(q)) return -1;
  const BudgetSpec& b = *spec_[q];
  if (b.period != BudgetPeriod::kRolling) return PeriodStart(b.period, now);
  const TimeUs w = Width(b);
  return (FloorDiv(now, w) - (kRollingBuckets - 1)) * w;
}

}  // namespace berth::tenancy
