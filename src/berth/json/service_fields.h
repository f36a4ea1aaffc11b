// The service keys of a job document, shared by the API (server/job_json.cc)
// and the native trace format (sim/readers/native_reader.cc):
//
//   {"name":"chat","kind":"service","replicas":2,"min_replicas":1,"max_replicas":8,
//    "latency_class":"critical","target":{"requests_per_s":20},
//    "spread":{"max_per_node":1,"max_per_leaf":4},"groups":[{"gpus":1}]}
//
// `kind` is "batch" (the default) or "service". For a service, the one task
// group is the shape of a replica; min_replicas and max_replicas default to
// replicas, replicas to min_replicas (or 1). `target` holds requests_per_s
// (per replica), or utilization (0..1) with capacity_per_replica (requests/s
// one replica serves at most). Service keys on a batch job are errors.
//
//   ServiceFields f;
//   if (f.Handles(key)) BERTH_RETURN_IF_ERROR(f.Parse(key, value));
//   ...
//   BERTH_RETURN_IF_ERROR(f.Finish(spec));   // sets spec.service for kind service
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "berth/common/status.h"
#include "berth/job/job.h"

namespace berth::json {

class ServiceFields {
 public:
  // True for kind, replicas, min_replicas, max_replicas, latency_class, target, spread.
  static bool Handles(const std::string& key);
  // Reads one of those keys. Errors name the key ("target.requests_per_s: ...").
  Status Parse(const std::string& key, const nlohmann::json& v);
  // Sets spec.service when the document is a service; errors for service
  // keys on a batch job.
  Status Finish(job::JobSpec& spec) const;

 private:
  bool service_ = false;
  std::string first_key_;  // the first service-only key seen (for the batch error)
  std::optional<int32_t> replicas_, min_, max_;
  job::ServiceSpec spec_;
};

// The service keys of `spec` (nothing for a batch job), for writers.
void ServiceToJson(const job::JobSpec& spec, nlohmann::json& out);
void ServiceToJson(const job::JobSpec& spec, nlohmann::ordered_json& out);

}  // namespace berth::json
