// The cluster model: regions > clusters > spines (pods) > leaves (rail blocks)
// > NVLink domains > nodes > GPUs. Immutable once built; the changing part
// (what is free) lives in state::ClusterState.
//
// Layout: nodes are numbered so that every topology domain is a contiguous
// range of node ids [begin, end). GPUs are numbered globally: node n owns
// GPUs [first_gpu, first_gpu + gpu_count). This keeps hot loops on dense arrays.
//
//   ClusterBuilder b;
//   b.AddNode({.name = "n0", .cpu_milli = 128000, .memory_mib = 1 << 20,
//              .gpu_count = 8, .gpu_type = "H100", .leaf = "leaf-0"});
//   StatusOr<Cluster> c = std::move(b).Build();
#pragma once

#include <array>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "berth/cluster/gpu_type.h"
#include "berth/cluster/level.h"
#include "berth/common/ids.h"
#include "berth/common/quantity.h"
#include "berth/common/status.h"

namespace berth::cluster {

inline constexpr int kMaxGpusPerNode = 64;

struct Node {
  std::string name;
  MilliCpu cpu_milli = 0;
  MiB memory_mib = 0;
  int32_t gpu_count = 0;
  GpuTypeId gpu_type;  // invalid for CPU-only nodes
  int32_t first_gpu = 0;
  std::array<DomainId, kNumLevels> domain;  // the node's domain at each level
};

struct Domain {
  Level level = Level::kRegion;
  std::string name;
  DomainId parent;  // invalid for regions
  NodeId begin, end;  // node range [begin, end)
  int32_t gpus = 0;
  // Bandwidth per GPU for traffic that stays inside this domain, in Gbit/s
  // (0 = unknown); used by topology-aware placement and runtime models.
  double bandwidth_gbps = 0;
  // Oversubscription of the domain's uplinks: the bandwidth its members could
  // send out divided by what its uplinks carry (1 = non-blocking). Traffic that
  // leaves the domain gets about bandwidth_gbps / oversubscription per GPU.
  double oversubscription = 1;
};

class Cluster {
 public:
  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(NodeId n) const { return nodes_[n.value()]; }
  int32_t num_nodes() const { return static_cast<int32_t>(nodes_.size()); }
  const std::vector<Domain>& domains() const { return domains_; }
  const Domain& domain(DomainId d) const { return domains_[d.value()]; }
  // Domains of one level, in node order.
  const std::vector<DomainId>& domains_at(Level level) const { return by_level_[static_cast<int>(level)]; }
  // The child domains of d (one level narrower), in node order; empty at the NVLink level.
  std::span<const DomainId> children(DomainId d) const {
    const auto& r = child_range_[d.value()];
    return std::span<const DomainId>(by_level_[static_cast<int>(domains_[d.value()].level) + 1].data() + r.first,
                                     r.second);
  }
  // The largest GPU count of any domain at a level.
  int32_t max_domain_gpus(Level level) const { return max_domain_gpus_[static_cast<int>(level)]; }
  // True when every NVLink domain is a single node.
  bool single_node_nvlink() const { return single_node_nvlink_; }
  const std::vector<GpuType>& gpu_types() const { return gpu_types_; }
  const GpuType& gpu_type(GpuTypeId t) const { return gpu_types_[t.value()]; }
  // A GPU type by its name, else by an alias (case-insensitive): the
  // accelerator catalog's names for it ("NVIDIA-H100-80GB-HBM3" for H100).
  std::optional<GpuTypeId> FindGpuType(std::string_view name) const;
  // Makes `alias` find `type` too (hetero::AddCatalogAliases adds the
  // catalog's). Ignored when `alias` is a type's own name; an alias given for
  // two different types finds neither (ambiguous).
  void AddGpuTypeAlias(std::string_view alias, GpuTypeId type);
  // Lower-cased alias -> type (-1: ambiguous), in name order.
  const std::map<std::string, int16_t>& gpu_type_aliases() const { return gpu_type_aliases_; }
  std::optional<NodeId> FindNode(std::string_view name) const;

  int64_t total_gpus() const { return total_gpus_; }
  int64_t total_milli_gpu() const { return total_gpus_ * kMilliPerGpu; }
  int32_t max_gpus_per_node() const { return max_gpus_per_node_; }
  // Node owning global GPU index g.
  NodeId NodeOfGpu(int32_t g) const { return gpu_node_[g]; }

  // Parses a `|`-separated list of GPU type names ("V100M16|V100M32"). Unknown
  // names are not an error: they yield `unknown` = true (nothing can match).
  struct TypeSetParse {
    GpuTypeSet set;
    bool unknown = false;
  };
  TypeSetParse ParseTypeSet(std::string_view spec) const;

  std::string Summary() const;

 private:
  friend class ClusterBuilder;
  std::vector<Node> nodes_;
  std::vector<Domain> domains_;
  std::array<std::vector<DomainId>, kNumLevels> by_level_;
  std::vector<std::pair<int32_t, int32_t>> child_range_;  // per domain: (offset in next level, count)
  std::array<int32_t, kNumLevels> max_domain_gpus_{};
  bool single_node_nvlink_ = true;
  std::vector<GpuType> gpu_types_;
  std::map<std::string, int16_t> gpu_type_aliases_;
  std::vector<NodeId> gpu_node_;
  std::unordered_map<std::string, int32_t> node_index_;
  int64_t total_gpus_ = 0;
  int32_t max_gpus_per_node_ = 0;
};

// What a builder needs to know about one node. Empty domain names mean "the
// default domain at that level" (one per parent), so a flat cluster needs none.
struct NodeSpec {
  std::string name;
  MilliCpu cpu_milli = 0;
  MiB memory_mib = 0;
  int32_t gpu_count = 0;
  std::string gpu_type;  // empty for CPU-only nodes
  MiB gpu_memory_mib = 0;  // 0: from the known-type table
  std::string region;
  std::string cluster;
  std::string spine;
  std::string leaf;
  std::string nvlink;  // empty: the node is its own NVLink domain
};

// Link figures of one domain; 0 means "not set here" (the level's default applies).
struct LinkSpec {
  double bandwidth_gbps = 0;
  double oversubscription = 0;
};

class ClusterBuilder {
 public:
  void AddNode(NodeSpec spec) { specs_.push_back(std::move(spec)); }
  // Declares a GPU type ahead of the nodes: declared types get the first ids,
  // in declaration order, and keep their memory and specs. Types that nodes
  // name without a declaration are added on first use.
  void DeclareGpuType(GpuType type) { declared_types_.push_back(std::move(type)); }
  // Defaults for every domain of a level: bandwidth per GPU (Gbit/s) and uplink
  // oversubscription ratio.
  void SetLevelBandwidth(Level level, double gbps) { bandwidth_[static_cast<int>(level)] = gbps; }
  void SetLevelOversubscription(Level level, double ratio) { oversub_[static_cast<int>(level)] = ratio; }
  // Overrides for one domain, named by its path of names from the region down
  // ("r0/c0/spine-1/leaf-3"; empty names in a NodeSpec are spelled "default").
  void SetDomainLinks(Level level, std::string path, LinkSpec links) {
    domain_links_.push_back({level, std::move(path), links});
  }
  // Builds the cluster. Nodes are grouped by domain (stable: first appearance
  // order of each domain, file order within a domain). Errors: duplicate node
  // or GPU type names, negative quantities, too many GPUs per node or GPU types,
  // non-positive oversubscription.
  StatusOr<Cluster> Build() &&;

 private:
  struct DomainLinks {
    Level level;
    std::string path;
    LinkSpec links;
  };
  std::vector<NodeSpec> specs_;
  std::vector<GpuType> declared_types_;
  std::vector<DomainLinks> domain_links_;
  std::array<double, kNumLevels> bandwidth_{0, 0, 0, 0, 0};
  std::array<double, kNumLevels> oversub_{1, 1, 1, 1, 1};
};

}  // namespace berth::cluster
