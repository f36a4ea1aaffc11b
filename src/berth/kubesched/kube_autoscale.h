// Deployments that Berth's autoscaler sizes (docs/services.md, "On
// Kubernetes", "Autoscaling a Deployment"): the annotations that opt a
// Deployment in and give its floor, ceiling and per-replica target, the load
// it reports (its body: server::ParseLoadReport). The kube loop keeps one
// workload::Autoscaler per such Deployment (kube_autoscale.cc) and writes the
// count it wants through the Deployment's scale subresource; the ReplicaSet
// controller then makes or deletes the pods, which Berth places as replicas.
//
//   metadata:
//     annotations:
//       berth.dev/autoscale: "true"
//       berth.dev/min-replicas: "1"            # the floor (and the guaranteed replicas)
//       berth.dev/max-replicas: "8"            # the ceiling (required)
//       berth.dev/target-requests-per-s: "20"  # or target-utilization + capacity-per-replica
//       berth.dev/load-requests-per-s: "45"    # optional: the load, as a metrics adapter writes it
//
//   StatusOr<DeploymentScaling> s = ParseDeploymentScaling(deployment);  // s->enabled, s->service
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "berth/common/quantity.h"
#include "berth/common/status.h"
#include "berth/job/service_spec.h"

namespace berth::kube {

struct DeploymentScaling {
  bool enabled = false;           // berth.dev/autoscale: "true"
  int32_t replicas = 1;           // spec.replicas (1 when absent, as the API server defaults it)
  // The autoscaler's view of the service: min_replicas, max_replicas and the
  // target from the annotations; replicas = spec.replicas clamped to them.
  job::ServiceSpec service;
  std::optional<int64_t> load_milli_rps;  // berth.dev/load-requests-per-s
  // HPA's behavior.scaleUp/scaleDown.stabilizationWindowSeconds:
  // berth.dev/scale-up-stabilization-s, berth.dev/scale-down-stabilization-s
  // (whole seconds, 0..3600; absent: the autoscaler's defaults, 0 and 300).
  std::optional<TimeUs> up_stabilization, down_stabilization;
};

// A Deployment's scaling annotations. Not enabled (and no error) without
// `berth.dev/autoscale` or with "false". Errors name the Deployment and the
// annotation: a value that is no number, a missing berth.dev/max-replicas or
// target, min above max, both targets, a stabilization window outside 0..3600 s.
StatusOr<DeploymentScaling> ParseDeploymentScaling(const nlohmann::json& deployment);

// The scale subresource of a Deployment: apis/apps/v1/namespaces/NS/deployments/NAME/scale.
std::string DeploymentScalePath(const std::string& ns, const std::string& name);

}  // namespace berth::kube
