// The service kind of job: a long-running set of identical replicas (an
// inference server, an API) rather than a gang that runs to completion.
//
//   JobSpec s;  s.name = "chat";  s.groups = {{.gpus = 1}};   // one replica's shape
//   s.service = ServiceSpec{.replicas = 2, .min_replicas = 1, .max_replicas = 8,
//                           .target_milli_rps = 20'000};      // 20 requests/s per replica
//
// The service's one task group is the shape of a replica (whole GPUs or a GPU
// share, as any task); its count is 1. The workload layer
// (workload/service_controller.h) turns the service into replica jobs: each
// replica is a one-task job with `replica_of` set to the service's id, placed
// by the scheduler like any job. Quantities are integers: load and targets in
// milli-requests per second.
#pragma once

#include <cstdint>
#include <string>

#include "berth/common/status.h"

namespace berth::job {

enum class LatencyClass { kStandard, kCritical };
const char* LatencyClassName(LatencyClass c);
// "critical" or "standard"; false for anything else.
bool ParseLatencyClass(const std::string& s, LatencyClass& out);

struct ServiceSpec {
  int32_t replicas = 1;      // wanted at the start (the autoscaler moves it within min..max)
  int32_t min_replicas = 1;  // the floor: guaranteed, never fewer available during a rolling update
  int32_t max_replicas = 1;
  LatencyClass latency_class = LatencyClass::kStandard;
  // Scaling target: requests/s one replica should serve (milli-rps), or a
  // utilization in percent of `capacity_milli_rps` (what one replica serves
  // at most). Exactly one of target_milli_rps and target_utilization_pct is
  // set (> 0) for the autoscaler; neither: the service keeps `replicas`.
  int64_t target_milli_rps = 0;
  int32_t target_utilization_pct = 0;
  int64_t capacity_milli_rps = 0;
  // Spread over failure domains: at most this many replicas of the service
  // on one node / in one leaf (0: no limit). The `spread` filter plugin.
  int32_t max_per_node = 0;
  int32_t max_per_leaf = 0;

  // Requests/s (milli) one replica takes at the target; 0 when none is set.
  int64_t per_replica_target() const;
};

// Checks the counts, the target and the spread limits. `who` names the job.
Status ValidateService(const ServiceSpec& s, const std::string& who);

}  // namespace berth::job
