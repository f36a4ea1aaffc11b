// The Kubernetes scheduler-extender protocol (k8s.io/kube-scheduler/extender/v1):
// the request and answer documents of the filter, prioritize, preempt and bind
// verbs, as C++ values with exact JSON mappings, and how a pod becomes a Berth
// task.
//
// The Go types carry no json tags (v1.20 and later alike), so kube-scheduler
// writes the field names: ExtenderArgs {"Pod","Nodes","NodeNames"};
// ExtenderBindingArgs {"PodName","PodNamespace","PodUID","Node"};
// ExtenderPreemptionArgs {"Pod","NodeNameToVictims","NodeNameToMetaVictims"}
// (the first with nodeCacheCapable false, the second with true), Victims
// {"Pods","NumPDBViolations"}, MetaVictims {"Pods":[{"UID"}],
// "NumPDBViolations"}; and its decoder matches keys case-insensitively. Berth
// reads the same way (exact key first, then any case; unknown keys ignored;
// "nodeToVictims" is accepted too) and writes: ExtenderFilterResult
// {"nodes","nodenames","failedNodes","failedAndUnresolvableNodes","error"}
// (1.20 has no FailedAndUnresolvableNodes field: every reason is in
// failedNodes as well), HostPriority {"host","score"}, ExtenderBindingResult
// {"Error"}, ExtenderPreemptionResult {"nodeNameToMetaVictims":{NODE:{"pods":
// [{"uid"}],"numPDBViolations"}}}.
//
// Gangs and queues come from the labels and annotations users already write:
//   group:  annotation scheduling.k8s.io/group-name (Volcano), label
//           scheduling.x-k8s.io/pod-group (coscheduling), label
//           kueue.x-k8s.io/pod-group-name (Kueue), annotation pod-group-name (KAI)
//   size:   annotation berth.dev/min-member, annotation
//           kueue.x-k8s.io/pod-group-total-count, label
//           pod-group.scheduling.sigs.k8s.io/min-available; a Volcano or
//           coscheduling PodGroup's minMember must be mirrored into
//           berth.dev/min-member (the extender sees pods, not PodGroups)
//   queue:  label kueue.x-k8s.io/queue-name, label kai.scheduler/queue,
//           annotation scheduling.volcano.sh/queue-name; else the namespace
//   GPU memory: annotation berth.dev/gpu-memory-mib (MiB per GPU; the gang's
//           pods are placed only on GPU types with that much memory)
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "berth/common/k8s_quantity.h"
#include "berth/common/quantity.h"
#include "berth/common/status.h"

namespace berth::server::k8s {

// What Berth reads from a v1.Pod.
struct Pod {
  std::string name, ns = "default", uid;
  std::map<std::string, std::string> labels, annotations;
  int32_t gpus = 0;         // nvidia.com/gpu (limits, else requests), summed over containers
  MilliCpu cpu_milli = 0;   // requests.cpu
  MiB memory_mib = 0;       // requests.memory, rounded up
  int32_t priority = 0;     // spec.priority (an int32 in Kubernetes; outside it is an error)
  // metadata.ownerReferences: the controller's kind and name (e.g.
  // ReplicaSet web-7d9f5c), else the first reference's; "" when none.
  std::string owner_kind, owner_name;

  std::string group_name() const;  // "" when not part of a gang
  // The label or annotation key group_name() came from ("" for none).
  std::string group_key() const;
  // Drops every label and annotation Berth does not read (group, size,
  // queue), and the raw document: what a cache of many pods keeps.
  void KeepSchedulingMetadata();
  int32_t min_member() const;      // 1 when unknown
  std::string queue() const;
  // GPU memory per GPU of each pod of the gang (annotation
  // berth.dev/gpu-memory-mib, an integer MiB; 0 when absent), as the
  // Kubernetes scheduler reads it. Error: not a non-negative integer.
  StatusOr<MiB> gpu_memory_mib() const;
};

struct ExtenderArgs {
  Pod pod;
  // The request document, held (never copied) so that `nodes` can point into it.
  std::shared_ptr<const nlohmann::json> doc;
  const nlohmann::json* nodes = nullptr;              // v1.NodeList (nodeCacheCapable: false)
  std::optional<std::vector<std::string>> node_names; // nodeCacheCapable: true
  // The candidate names, from whichever was sent.
  std::vector<std::string> CandidateNames() const;
};

struct FilterResult {
  std::optional<nlohmann::json> nodes;  // a v1.NodeList holding the nodes that passed
  std::optional<std::vector<std::string>> node_names;
  std::map<std::string, std::string> failed_nodes;
  std::map<std::string, std::string> failed_and_unresolvable;
  std::string error;
};

struct HostPriority {
  std::string host;
  int64_t score = 0;  // 0..10 (MaxExtenderPriority)
};

struct BindingArgs {
  std::string pod_name, pod_namespace, pod_uid, node;
};

struct BindingResult {
  std::string error;
};

struct MetaVictims {
  std::vector<std::string> pod_uids;
  int64_t num_pdb_violations = 0;
};

struct PreemptionArgs {
  Pod pod;
  // NodeNameToVictims (full pods, reduced to their uids; also read from
  // "nodeToVictims") and NodeNameToMetaVictims.
  std::map<std::string, MetaVictims> node_to_victims;
  std::map<std::string, MetaVictims> node_to_meta_victims;
  bool has_victims = false, has_meta_victims = false;
};

struct PreemptionResult {
  std::map<std::string, MetaVictims> node_to_meta_victims;
};

inline constexpr int64_t kMaxExtenderPriority = 10;

// Identifiers longer than this (Kubernetes' limit for object names) are
// refused: pod name, namespace, uid, group and queue names.
inline constexpr size_t kMaxK8sName = 253;

// Parsers: InvalidArgument naming the field on a malformed document. Values
// are strict: integers range-checked before narrowing, quantities by the
// Kubernetes grammar with overflow checks (also of their sum over
// containers), identifiers without control or bidirectional characters.
// Documents come from the bounded parser (json/json_parse.h), so they are at
// most 64 levels deep.
StatusOr<Pod> ParsePod(const nlohmann::json& v);
// Takes the document (moved in by the service; copied by a caller that keeps it).
StatusOr<ExtenderArgs> ParseExtenderArgs(nlohmann::json v);
StatusOr<FilterResult> ParseFilterResult(const nlohmann::json& v);
StatusOr<std::vector<HostPriority>> ParseHostPriorityList(const nlohmann::json& v);
StatusOr<BindingArgs> ParseBindingArgs(const nlohmann::json& v);
StatusOr<BindingResult> ParseBindingResult(const nlohmann::json& v);
StatusOr<PreemptionArgs> ParsePreemptionArgs(const nlohmann::json& v);
StatusOr<PreemptionResult> ParsePreemptionResult(const nlohmann::json& v);

nlohmann::json ToJson(const FilterResult& r);
nlohmann::json ToJson(const std::vector<HostPriority>& list);
nlohmann::json ToJson(const BindingArgs& a);
nlohmann::json ToJson(const BindingResult& r);
nlohmann::json ToJson(const PreemptionResult& r);

// A Kubernetes resource quantity ("500m", "2", "1.5", "64Gi", "1e3") times
// `scale` (1000 for milli-units), rounded up. Errors name the text. The same
// as berth::ParseK8sQuantity (common/k8s_quantity.h), which the node model
// shares.
inline StatusOr<int64_t> ParseQuantity(const std::string& text, int64_t scale) {
  return ParseK8sQuantity(text, scale);
}

}  // namespace berth::server::k8s
