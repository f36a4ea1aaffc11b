// The HPA-like autoscaler.
#include "berth/workload/autoscaler.h"

#include <algorithm>
#include <cmath>

namespace berth::workload {

Status AutoscalerOptions::Validate() const {
  if (period <= 0) return InvalidArgument("autoscaler: period must be positive");
  if (!(tolerance >= 0 && tolerance < 1)) return InvalidArgument("autoscaler: tolerance must be in [0, 1)");
  if (up_stabilization < 0 || down_stabilization < 0)
    return InvalidArgument("autoscaler: stabilization windows must not be negative");
  if (up_pods < 0 || up_percent < 0 || down_percent < 0 || down_percent > 100)
    return InvalidArgument("autoscaler: rate limits: pods and percents >= 0, down percent <= 100");
  if (up_pods == 0 && up_percent == 0) return InvalidArgument("autoscaler: the scale-up limit allows no growth");
  if (up_period <= 0 || down_period <= 0) return InvalidArgument("autoscaler: rate-limit periods must be positive");
  if (idle_to_zero < -1) return InvalidArgument("autoscaler: idle_to_zero must be >= 0 (or -1: never)");
  if (horizon < 0) return InvalidArgument("autoscaler: the forecast horizon must not be negative");
  if (!(forecast_options.alpha > 0 && forecast_options.alpha <= 1) ||
      !(forecast_options.beta >= 0 && forecast_options.beta <= 1) || forecast_options.season < 1)
    return InvalidArgument("autoscaler: forecast: alpha in (0, 1], beta in [0, 1], season >= 1");
  return Status::Ok();
}

Autoscaler::Autoscaler(const job::ServiceSpec& spec, AutoscalerOptions options)
    : spec_(spec), o_(options), forecaster_(options.forecast, options.forecast_options) {}

void Autoscaler::Observe(TimeUs now, int64_t load) {
  observed_ = true;
  if (load > 0) {
    idle_since_ = -1;
  } else if (load_ > 0 || idle_since_ < 0) {
    idle_since_ = now;
  }
  load_ = std::max<int64_t>(0, load);
}

int32_t Autoscaler::Raw(int32_t current, int64_t load) const {
  const int64_t target = spec_.per_replica_target();
  if (target <= 0) return current;
  if (current > 0) {
    const double ratio = static_cast<double>(load) / (static_cast<double>(current) * static_cast<double>(target));
    if (std::abs(ratio - 1.0) <= o_.tolerance) return current;
  }
  const int64_t n = (load + target - 1) / target;
  return static_cast<int32_t>(std::min<int64_t>(n, spec_.max_replicas));
}

int32_t Autoscaler::Evaluate(TimeUs now, int32_t current) {
  // The forecaster's samples: the load at each period boundary.
  if (next_sample_ < 0) next_sample_ = now;
  while (next_sample_ <= now) {
    forecaster_.Observe(load_);
    next_sample_ += o_.period;
  }
  next_eval_ = now + o_.period;
  if (spec_.per_replica_target() <= 0 || !observed_) return std::clamp(current, spec_.min_replicas, spec_.max_replicas);

  int64_t load = load_;
  if (o_.forecast != ForecastKind::kNone) {
    const auto steps = static_cast<int32_t>(std::max<TimeUs>(1, (o_.horizon + o_.period - 1) / o_.period));
    load = std::max(load, forecaster_.Forecast(steps));
  }
  scaled_load_ = load;
  int32_t raw = Raw(current, load);
  const bool idle = load_ == 0 && idle_since_ >= 0 && o_.idle_to_zero >= 0 && now - idle_since_ >= o_.idle_to_zero;
  if (load_ == 0 && !idle) raw = std::max(raw, std::min(current, std::max(1, spec_.min_replicas)));
  if (load_ > 0) raw = std::max(raw, 1);

  recommendations_.emplace_back(now, raw);
  const TimeUs keep = std::max(o_.up_stabilization, o_.down_stabilization);
  while (!recommendations_.empty() && recommendations_.front().first < now - keep) recommendations_.pop_front();

  int32_t desired = raw;
  if (raw > current) {
    int32_t lo = raw;
    for (const auto& [t, r] : recommendations_)
      if (t >= now - o_.up_stabilization) lo = std::min(lo, r);
    desired = std::max(current, lo);
  } else if (raw < current) {
    int32_t hi = raw;
    for (const auto& [t, r] : recommendations_)
      if (t >= now - o_.down_stabilization) hi = std::max(hi, r);
    desired = std::min(current, hi);
  }
  if (idle && spec_.min_replicas == 0) desired = 0;  // scale to zero skips the down window

  // Rate limits against the counts one period ago (the lowest for scale-up,
  // the highest for scale-down, as HPA takes them).
  counts_.emplace_back(now, current);
  const TimeUs span = std::max(o_.up_period, o_.down_period);
  while (counts_.size() > 1 && counts_.front().first < now - span) counts_.pop_front();
  int32_t base_up = current, base_down = current;
  for (const auto& [t, c] : counts_) {
    if (t > now - o_.up_period) base_up = std::min(base_up, c);
    if (t > now - o_.down_period) base_down = std::max(base_down, c);
  }
  const int64_t up_limit =
      base_up + std::max<int64_t>(o_.up_pods, int64_t{base_up} * o_.up_percent / 100);
  const int64_t down_limit = base_down - int64_t{base_down} * o_.down_percent / 100;
  if (desired > up_limit) desired = static_cast<int32_t>(up_limit);
  if (desired < down_limit && !(idle && spec_.min_replicas == 0)) desired = static_cast<int32_t>(down_limit);
  return std::clamp(desired, spec_.min_replicas, spec_.max_replicas);
}

}  // namespace berth::workload
