// Kubernetes Node objects (core/v1 Node, as the API server returns them) seen
// as Berth's cluster model: GPUs, CPU and memory from status.allocatable,
// the GPU type from the GPU operator's product label through the accelerator
// catalog, the place in the topology from node labels (cluster/node_labels.h),
// and whether the node may take new pods. Shared by the live scheduler and by
// `berth simulate --cluster nodes.json`, so both see a node alike.
//
//   NodeModelOptions o;
//   o.catalog = &catalog;                                   // optional
//   o.levels = {{"example.com/rack", cluster::Level::kLeaf}};
//   StatusOr<NodeInfo> n = ParseNode(node_json, o);
//   StatusOr<cluster::Cluster> c = BuildCluster({*n, ...}, o);
//   StatusOr<cluster::Cluster> c2 = LoadNodeList("nodes.json", o);  // kubectl get nodes -o json
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/cluster/level.h"
#include "berth/common/status.h"
#include "berth/hetero/catalog.h"

namespace berth::kube {

struct NodeModelOptions {
  // Extra label -> level mappings, checked before the built-in keys, like
  // Kueue's and KAI's Topology `levels` (e.g. {"example.com/rack", Level::kLeaf}).
  // Built-in keys per level, in priority order: cluster::BuiltinTopologyLabels()
  // (Topograph's fabric.topograph.run/tier-0|1 and accelerator.topograph.run/*,
  // the older network.topology.nvidia.com/*, nvidia.com/gpu.clique,
  // topology.kubernetes.io/zone -> cluster and /region -> region).
  std::vector<std::pair<std::string, cluster::Level>> levels;
  std::string gpu_resource = "nvidia.com/gpu";
  std::string product_label = "nvidia.com/gpu.product";  // mapped to the accelerator catalog via its aliases
  // The catalog that product names resolve through (ResolveGpuProduct);
  // borrowed, may be null (then the product text is the type name as it is).
  const hetero::Catalog* catalog = nullptr;
  // NoSchedule / NoExecute taints that do not make a node unschedulable:
  // "KEY", "KEY=VALUE", "KEY:EFFECT" or "KEY=VALUE:EFFECT" (like a toleration
  // with operator Exists, or Equal when a value is given). Default: the GPU
  // resource's own taint, which Kubernetes' ExtendedResourceToleration
  // admission makes every GPU pod tolerate (set it too when gpu_resource changes).
  std::vector<std::string> tolerated_taints = {"nvidia.com/gpu"};
};

// What Berth needs of one v1.Node.
struct NodeInfo {
  // name; cpu_milli, memory_mib (status.allocatable, else status.capacity, per
  // resource; memory rounded down to MiB); gpu_count (the GPU resource,
  // allocatable else capacity); gpu_type (the catalog's canonical name, or the
  // raw product text when unknown; empty when no GPUs); gpu_memory_mib (label
  // nvidia.com/gpu.memory, else the catalog's, else 0); region, cluster,
  // spine, leaf, nvlink from the labels.
  cluster::NodeSpec spec;
  bool ready = false;          // condition Ready == "True" and no not-ready / unreachable taint
  bool unschedulable = false;  // spec.unschedulable (cordoned) or a NoSchedule/NoExecute taint not tolerated
  // A NoExecute taint not tolerated (other than not-ready / unreachable,
  // which clear `ready`): Kubernetes evicts the pods there, so the gangs with
  // a pod there are requeued as for a node that is not ready.
  std::string no_execute;  // the taint's key, or empty
  std::string uid, resource_version;
  bool usable() const { return ready && !unschedulable; }
  // Whether the pods there are lost: not ready (False, Unknown, not-ready or
  // unreachable taints) or an untolerated NoExecute taint.
  bool loses_pods() const { return !ready || !no_execute.empty(); }
};

// Parses one v1.Node. InvalidArgument naming the node and the field on a
// malformed document ("node gpu-3: status.allocatable.cpu: 'x' is not a
// quantity"); a missing status is not an error (a node not yet reported has
// no resources and is not ready).
StatusOr<NodeInfo> ParseNode(const nlohmann::json& node, const NodeModelOptions& options);

// A cluster from node infos (all of them, usable or not: the caller marks
// unusable ones down). Node order is deterministic, whatever the input order:
// sorted by (region, cluster, spine, leaf, nvlink, name), so node ids are
// stable for the same node set. Errors: duplicate names, too many GPUs on a
// node (those of ClusterBuilder::Build). `options` is not read today: the
// specs carry what the build needs.
StatusOr<cluster::Cluster> BuildCluster(const std::vector<NodeInfo>& nodes, const NodeModelOptions& options);

// A v1.NodeList file (`kubectl get nodes -o json`), or a JSON array of Nodes.
// Errors name the file and the item ("nodes.json: items[3]: node gpu-3: ...").
StatusOr<cluster::Cluster> LoadNodeList(const std::string& path, const NodeModelOptions& options);
// The same from a parsed document; `source_name` stands for the file in errors.
StatusOr<std::vector<NodeInfo>> ParseNodeList(const nlohmann::json& list, std::string_view source_name,
                                              const NodeModelOptions& options);

// The catalog's canonical name for an nvidia.com/gpu.product value, or ""
// when unknown. Tried in order: the text as it is (names and aliases are
// case-insensitive); without a "-MIG-..." or "-SHARED" suffix (MIG and
// time-slicing variants); without a leading "NVIDIA-", "Tesla-" or "NVIDIA "
// ("NVIDIA-L40S" -> L40S, "Tesla-V100-SXM2-16GB" -> V100-16).
std::string ResolveGpuProduct(const hetero::Catalog& catalog, std::string_view product);

}  // namespace berth::kube
