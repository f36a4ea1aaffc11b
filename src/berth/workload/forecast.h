// Short-horizon load forecasts for predictive autoscaling. Each forecaster is
// fed one load sample per step (milli-requests/s at a fixed interval) and
// predicts the load `h` steps ahead.
//
//   Holt (linear exponential smoothing):
//     level_t = a * x_t + (1 - a) * (level_{t-1} + trend_{t-1})
//     trend_t = b * (level_t - level_{t-1}) + (1 - b) * trend_{t-1}
//     forecast(h) = level_t + h * trend_t      (never below 0)
//   Seasonal naive: forecast(h) = x_{t + h - season}, the load one season
//     (the last `season` steps) earlier at the same phase; the latest sample
//     until a full season has been seen.
//
//   Forecaster f(ForecastKind::kHolt, {.alpha = 0.5, .beta = 0.3});
//   f.Observe(12000);  f.Observe(15000);  int64_t next = f.Forecast(2);
#pragma once

#include <cstdint>
#include <deque>
#include <string>

namespace berth::workload {

enum class ForecastKind { kNone, kHolt, kSeasonal };
const char* ForecastKindName(ForecastKind k);
// "none", "holt", "seasonal"; false for anything else.
bool ParseForecastKind(const std::string& s, ForecastKind& out);

struct ForecastOptions {
  double alpha = 0.5;    // Holt level smoothing, (0, 1]
  double beta = 0.3;     // Holt trend smoothing, [0, 1]
  int32_t season = 60;   // seasonal naive: steps in one season
};

class Forecaster {
 public:
  Forecaster(ForecastKind kind, ForecastOptions options) : kind_(kind), o_(options) {}
  void Observe(int64_t x);
  // The load `h` steps after the latest sample (h >= 1); 0 before any sample.
  int64_t Forecast(int32_t h) const;
  ForecastKind kind() const { return kind_; }

 private:
  ForecastKind kind_;
  ForecastOptions o_;
  int64_t samples_ = 0;
  int64_t last_ = 0;
  double level_ = 0, trend_ = 0;
  std::deque<int64_t> history_;  // seasonal: the last `season` samples
};

}  // namespace berth::workload
