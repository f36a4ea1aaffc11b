// Service spec helpers and validation.
#include "berth/job/service_spec.h"

namespace berth::job {

const char* LatencyClassName(LatencyClass c) { return c == LatencyClass::kCritical ? "critical" : "standard"; }

bool ParseLatencyClass(const std::string& s, LatencyClass& out) {
  if (s == "critical") {
    out = LatencyClass::kCritical;
  } else if (s == "standard") {
    out = LatencyClass::kStandard;
  } else {
    return false;
  }
  return true;
}

int64_t ServiceSpec::per_replica_target() const {
  if (target_milli_rps > 0) return target_milli_rps;
  if (target_utilization_pct > 0) return capacity_milli_rps * target_utilization_pct / 100;
  return 0;
}

Status ValidateService(const ServiceSpec& s, const std::string& who) {
  const std::string w = who + ": ";
  if (s.min_replicas < 0) return InvalidArgument(w + "min_replicas: negative");
  if (s.max_replicas < 1) return InvalidArgument(w + "max_replicas: must be at least 1");
  if (s.max_replicas > 100000) return InvalidArgument(w + "max_replicas: more than 100000");
  if (s.min_replicas > s.max_replicas)
    return InvalidArgument(w + "min_replicas " + std::to_string(s.min_replicas) + " is above max_replicas " +
                           std::to_string(s.max_replicas));
  if (s.replicas < s.min_replicas || s.replicas > s.max_replicas)
    return InvalidArgument(w + "replicas " + std::to_string(s.replicas) + " is outside min_replicas..max_replicas (" +
                           std::to_string(s.min_replicas) + ".." + std::to_string(s.max_replicas) + ")");
  if (s.target_milli_rps < 0) return InvalidArgument(w + "target.requests_per_s: negative");
  if (s.target_utilization_pct < 0 || s.target_utilization_pct > 100)
    return InvalidArgument(w + "target.utilization: must be in 0..1");
  if (s.target_milli_rps > 0 && s.target_utilization_pct > 0)
    return InvalidArgument(w + "target: give requests_per_s or utilization, not both");
  if (s.target_utilization_pct > 0 && s.capacity_milli_rps <= 0)
    return InvalidArgument(w + "target.utilization needs target.capacity_per_replica (requests/s one replica serves)");
  if (s.capacity_milli_rps < 0) return InvalidArgument(w + "target.capacity_per_replica: negative");
  if (s.max_per_node < 0 || s.max_per_leaf < 0) return InvalidArgument(w + "spread: limits must not be negative");
  return Status::Ok();
}

}  // namespace berth::job
