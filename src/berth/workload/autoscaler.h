// A horizontal autoscaler for one service, after Kubernetes' HPA (v2
// behaviour), run by the service controller in the scheduling loop.
//
// At each evaluation (every `period`) with the service's load L (milli-rps,
// the latest report) and per-replica target T:
//   raw      = ceil(L' / T), L' = L, or max(L, forecast) when predictive
//              (the forecast `horizon` ahead, forecast.h); within a tolerance
//              of the current count (|L' / (current * T) - 1| <= tolerance)
//              the current count is kept, as HPA does.
//   idle     = L == 0 for at least `idle_to_zero` (scale to zero, when
//              min_replicas is 0); a service at 0 with any load wakes to
//              at least one replica at once.
//   stable   = scale up to the lowest recommendation of the last
//              up_stabilization, down to the highest of the last
//              down_stabilization (HPA's stabilization windows);
//   limited  = within the rate limits: at most max(up_pods, up_percent % of
//              the count one up_period ago) more than that count, and at most
//              down_percent % of the count one down_period ago fewer;
//   desired  = limited clamped to min_replicas..max_replicas.
// A service without a target keeps its replica count.
//
//   Autoscaler a(service_spec, AutoscalerOptions{});
//   int32_t n = a.Evaluate(now, current, load_milli_rps);
#pragma once

#include <cstdint>
#include <deque>
#include <utility>

#include "berth/common/quantity.h"
#include "berth/common/status.h"
#include "berth/job/service_spec.h"
#include "berth/workload/forecast.h"

namespace berth::workload {

struct AutoscalerOptions {
  TimeUs period = 15 * kUsPerSecond;              // how often it evaluates (HPA's sync period)
  double tolerance = 0.1;
  TimeUs up_stabilization = 0;
  TimeUs down_stabilization = 300 * kUsPerSecond;
  int32_t up_pods = 4;                            // HPA default: max(4 pods, 100%) per 15 s
  int32_t up_percent = 100;
  TimeUs up_period = 15 * kUsPerSecond;
  int32_t down_percent = 100;                     // HPA default: 100% per 15 s
  TimeUs down_period = 15 * kUsPerSecond;
  TimeUs idle_to_zero = 300 * kUsPerSecond;       // -1: never scale to zero
  ForecastKind forecast = ForecastKind::kNone;    // predictive when not kNone
  ForecastOptions forecast_options;
  TimeUs horizon = 120 * kUsPerSecond;            // how far ahead the forecast looks

  Status Validate() const;
};

class Autoscaler {
 public:
  Autoscaler(const job::ServiceSpec& spec, AutoscalerOptions options);
  // A load report (milli-rps) at `now`; the forecaster sees one sample per period.
  void Observe(TimeUs now, int64_t load);
  // The replica count wanted at `now` with `current` replicas wanted so far.
  int32_t Evaluate(TimeUs now, int32_t current);
  // When the next evaluation is due.
  TimeUs next_evaluation() const { return next_eval_; }
  int64_t load() const { return load_; }
  // The load the last evaluation scaled for (the forecast when predictive).
  int64_t scaled_load() const { return scaled_load_; }
  const AutoscalerOptions& options() const { return o_; }

 private:
  int32_t Raw(int32_t current, int64_t load) const;

  job::ServiceSpec spec_;
  AutoscalerOptions o_;
  Forecaster forecaster_;
  bool observed_ = false;  // a load report arrived (before one, the count is kept)
  int64_t load_ = 0;
  int64_t scaled_load_ = 0;
  TimeUs idle_since_ = -1;  // load has been 0 since then (-1: it is not 0)
  TimeUs next_sample_ = -1;
  TimeUs next_eval_ = 0;
  std::deque<std::pair<TimeUs, int32_t>> recommendations_;  // raw, in time order
  std::deque<std::pair<TimeUs, int32_t>> counts_;           // desired after each evaluation
};

}  // namespace berth::workload
