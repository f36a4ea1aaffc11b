// What the extender verbs are sent, checked against what the API server
// holds, and the limits that bound what the verbs can make Berth track.
//
// kube-scheduler sends whole pods; anyone who can reach the verbs can send
// made-up ones. With a source of truth (ExtenderPodSource: the pod watch and
// API reads of `berth serve --extender`), Berth schedules the API server's
// copy of the pod a request names, never the request's: the pod must exist
// with that uid, be unbound and not ended, and name one of the accepted
// schedulers; its priority, resources, group and queue are the API server's.
// A group whose kind has PodGroup objects in the cluster (Volcano,
// coscheduling) must have its PodGroup, and its size is the PodGroup's
// minMember (a pod claiming another size is refused).
//
//   auto pod = VerifyExtenderPod(args.pod, source, {"berth"});   // the API server's pod, or why not
//   auto size = VerifyGroupSize(*pod, source);                   // 1 for a lone pod
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "berth/common/status.h"
#include "berth/server/extender.h"

namespace berth::server {

// Bounds on what the extender verbs may make the service hold. Names follow
// Kubernetes' own limits (object names 253 characters, namespaces 63).
struct ExtenderLimits {
  size_t max_name = 253;       // pod and group names
  size_t max_namespace = 63;
  size_t max_uid = 128;
  int64_t max_groups = 100'000;  // groups (Berth jobs) tracked at once
  int64_t max_pods = 200'000;    // pods tracked at once, over every group
};

// A pod as the API server holds it.
struct ApiPod {
  k8s::Pod pod;                // parsed from the API server's object (KeepSchedulingMetadata applied)
  std::string node;            // spec.nodeName ("": unbound)
  std::string scheduler_name;  // spec.schedulerName
  bool ended = false;          // status.phase Succeeded or Failed
};

// The API server's pods and PodGroups (implemented over a watch and reads by
// kube::ExtenderLink). Called on HTTP threads: thread-safe, may block briefly.
class ExtenderPodSource {
 public:
  virtual ~ExtenderPodSource() = default;
  // Pod ns/name: NotFound when the API server has none; Unavailable when it
  // cannot say now.
  virtual StatusOr<ApiPod> GetPod(const std::string& ns, const std::string& name) = 0;
  // The minMember of the PodGroup object the pod's group names. nullopt when
  // the cluster serves no PodGroup kind for the pod's group key (Kueue, KAI,
  // or the CRD not installed); NotFound when it does and the object is missing.
  virtual StatusOr<std::optional<int32_t>> GroupMinMember(const k8s::Pod& pod) = 0;
};

// InvalidArgument when a name, namespace, uid or group name is over the limits.
Status CheckPodSizes(const k8s::Pod& pod, const ExtenderLimits& limits);

// The API server's copy of the pod `claimed` names, if `claimed` matches it:
// same uid (a request without a uid matches none), unbound, not ended, and
// spec.schedulerName in `scheduler_names` (empty: any). Otherwise an error
// whose message is the reason to answer (FailedPrecondition; NotFound when the
// pod does not exist; Unavailable when the source cannot tell).
StatusOr<k8s::Pod> VerifyExtenderPod(const k8s::Pod& claimed, ExtenderPodSource& source,
                                     const std::vector<std::string>& scheduler_names);

// The size of the pod's gang: 1 for a lone pod; the PodGroup's minMember
// where the cluster has PodGroup objects of that kind (the pod's own size
// annotation, if any, must agree); else the pod's min_member(). The returned
// size is also written into the pod (berth.dev/min-member) so that
// pod.min_member() says it.
StatusOr<int32_t> VerifyGroupSize(k8s::Pod& pod, ExtenderPodSource& source);

}  // namespace berth::server
