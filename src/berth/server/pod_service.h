// Kubernetes pods as service replicas (docs/services.md, "On Kubernetes"):
// which pods are replicas of which service, and the replica job a pod
// becomes, for the Kubernetes scheduler (kubesched) and the extender verbs
// (service_extender.cc) alike.
//
// A pod is a replica of service NS/NAME when it has the label
// `berth.dev/service: NAME`, or when its controller is a ReplicaSet (the
// pods of a Deployment): NAME is then the Deployment's, the ReplicaSet's name
// without its `-<pod-template-hash>` suffix. `berth.dev/service: none` keeps
// a ReplicaSet's pod a batch job; a pod of a gang is never a replica.
// Annotations: `berth.dev/min-replicas` (replicas of the service that are
// guaranteed; default all), `berth.dev/latency-class: critical|standard`,
// `berth.dev/max-per-node` (spread), `berth.dev/best-effort: "true"` (a batch
// pod that is best effort).
//
//   StatusOr<PodService> s = ServiceOfPod(pod);      // s->name "ml/web"
//   MakeReplica(*s, JobId(7), /*active=*/1, spec);   // spec.replica_of 7, priority + 2000
#pragma once

#include <cstdint>
#include <string>

#include "berth/common/ids.h"
#include "berth/common/status.h"
#include "berth/job/job.h"
#include "berth/server/extender.h"

namespace berth::server::k8s {

struct PodService {
  std::string name;            // "ns/NAME"; "" when the pod is not a replica
  std::string source;          // why: "label berth.dev/service" or "ReplicaSet NAME"
  int32_t min_replicas = -1;   // annotation berth.dev/min-replicas (-1: every replica guaranteed)
  int32_t max_per_node = 0;    // annotation berth.dev/max-per-node (0: no limit)
  job::LatencyClass latency_class = job::LatencyClass::kStandard;
  bool best_effort = false;    // annotation berth.dev/best-effort (batch pods only)

  bool replica() const { return !name.empty(); }
};

// The pod's service, if it is a replica. Errors name the label or
// annotation that is malformed.
StatusOr<PodService> ServiceOfPod(const Pod& pod);

// Makes `spec` (a one-task job of the pod's shape) a replica of the service
// whose id is `service`, with `active` replicas of it already placed or
// waiting: `replica_of`, a copy of the service's spec (spread limit, latency
// class), and the priority of workload/service_controller.h (plus 2000 while
// fewer than min_replicas are active, else plus 1000; plus 100 for critical).
// A batch pod (not a replica) only gets `best_effort`.
void MakeReplica(const PodService& s, JobId service, int32_t active, job::JobSpec& spec);

}  // namespace berth::server::k8s
