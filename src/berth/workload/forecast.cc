// Load forecasts (Holt, seasonal naive).
#include "berth/workload/forecast.h"

#include <algorithm>
#include <cmath>

namespace berth::workload {

const char* ForecastKindName(ForecastKind k) {
  switch (k) {
    case ForecastKind::kNone: return "none";
    case ForecastKind::kHolt: return "holt";
    case ForecastKind::kSeasonal: return "seasonal";
  }
  return "none";
}

bool ParseForecastKind(const std::string& s, ForecastKind& out) {
  if (s == "none") out = ForecastKind::kNone;
  else if (s == "holt") out = ForecastKind::kHolt;
  else if (s == "seasonal") out = ForecastKind::kSeasonal;
  else return false;
  return true;
}

void Forecaster::Observe(int64_t x) {
  const double v = static_cast<double>(x);
  if (samples_ == 0) {
    level_ = v;
    trend_ = 0;
  } else {
    const double prev = level_;
    level_ = o_.alpha * v + (1 - o_.alpha) * (level_ + trend_);
    trend_ = o_.beta * (level_ - prev) + (1 - o_.beta) * trend_;
  }
  last_ = x;
  ++samples_;
  if (kind_ == ForecastKind::kSeasonal) {
    history_.push_back(x);
    while (static_cast<int32_t>(history_.size()) > std::max(1, o_.season)) history_.pop_front();
  }
}

int64_t Forecaster::Forecast(int32_t h) const {
  if (samples_ == 0) return 0;
  switch (kind_) {
    case ForecastKind::kNone:
      return last_;
    case ForecastKind::kHolt:
      return std::max<int64_t>(0, std::llround(level_ + h * trend_));
    case ForecastKind::kSeasonal: {
      const int32_t season = std::max(1, o_.season);
      if (static_cast<int32_t>(history_.size()) < season) return last_;
      // history_[0] is season - 1 steps before the latest: step t + h - season.
      const int32_t k = (h - 1) % season;
      return history_[k];
    }
  }
  return last_;
}

}  // namespace berth::workload
