// Kubernetes pods as service replicas (see pod_service.h).
#include "berth/server/pod_service.h"

#include <charconv>

#include "berth/workload/service_controller.h"

namespace berth::server::k8s {
namespace {

const std::string* Find(const std::map<std::string, std::string>& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? nullptr : &it->second;
}

// A non-negative integer annotation; `out` stays when the annotation is absent.
Status ReadCount(const Pod& pod, const char* key, int32_t lo, int32_t& out) {
  const std::string* v = Find(pod.annotations, key);
  if (!v) return Status::Ok();
  int32_t n = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc() || end != v->data() + v->size() || n < lo || n > 100'000)
    return InvalidArgument("pod " + pod.ns + "/" + pod.name + ": annotation " + key + ": expected an integer in " +
                           std::to_string(lo) + "..100000, found '" + v->substr(0, 64) + "'");
  out = n;
  return Status::Ok();
}

}  // namespace

StatusOr<PodService> ServiceOfPod(const Pod& pod) {
  PodService s;
  const std::string ref = "pod " + pod.ns + "/" + pod.name;
  if (const std::string* be = Find(pod.annotations, "berth.dev/best-effort")) {
    if (*be != "true" && *be != "false")
      return InvalidArgument(ref + ": annotation berth.dev/best-effort: expected \"true\" or \"false\", found '" +
                             be->substr(0, 64) + "'");
    s.best_effort = *be == "true";
  }
  const std::string* label = Find(pod.labels, "berth.dev/service");
  std::string name;
  if (label && !label->empty() && *label != "none") {
    name = *label;
    s.source = "label berth.dev/service";
  } else if (!label && pod.owner_kind == "ReplicaSet" && !pod.owner_name.empty()) {
    // A Deployment's ReplicaSet is named DEPLOYMENT-HASH, HASH its pods' pod-template-hash.
    name = pod.owner_name;
    if (const std::string* hash = Find(pod.labels, "pod-template-hash"); hash && !hash->empty()) {
      const std::string suffix = "-" + *hash;
      if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
        name.resize(name.size() - suffix.size());
    }
    s.source = "ReplicaSet " + pod.owner_name;
  }
  if (name.empty() || !pod.group_name().empty()) return s;  // batch (a gang's pods stay its members)
  if (s.best_effort)
    return InvalidArgument(ref + ": annotation berth.dev/best-effort: a replica of service " + name +
                           " (" + s.source + ") cannot be best effort");
  BERTH_RETURN_IF_ERROR(ReadCount(pod, "berth.dev/min-replicas", 0, s.min_replicas));
  BERTH_RETURN_IF_ERROR(ReadCount(pod, "berth.dev/max-per-node", 0, s.max_per_node));
  if (const std::string* c = Find(pod.annotations, "berth.dev/latency-class")) {
    if (!job::ParseLatencyClass(*c, s.latency_class))
      return InvalidArgument(ref + ": annotation berth.dev/latency-class: expected critical or standard, found '" +
                             c->substr(0, 64) + "'");
  }
  s.name = pod.ns + "/" + name;
  return s;
}

void MakeReplica(const PodService& s, JobId service, int32_t active, job::JobSpec& spec) {
  if (!s.replica()) {
    spec.best_effort = s.best_effort;
    return;
  }
  spec.replica_of = service;
  job::ServiceSpec copy;
  copy.replicas = 1;
  copy.min_replicas = 1;
  copy.max_replicas = 1;
  copy.latency_class = s.latency_class;
  copy.max_per_node = s.max_per_node;
  spec.service = copy;
  const bool guaranteed = s.min_replicas < 0 || active < s.min_replicas;
  spec.priority += (guaranteed ? workload::kGuaranteedBoost : workload::kBurstBoost) +
                   (s.latency_class == job::LatencyClass::kCritical ? workload::kCriticalBoost : 0);
}

}  // namespace berth::server::k8s
