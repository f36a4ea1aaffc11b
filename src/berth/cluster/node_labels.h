// Where a Kubernetes node sits in the topology, read from its labels: the
// keys NVIDIA Topograph writes (current fabric.topograph.run/* and
// accelerator.topograph.run/*, older network.topology.nvidia.com/*), the GPU
// operator's nvidia.com/gpu.clique and the well-known topology.kubernetes.io/*.
// One table, shared by cluster YAML files (flat `nodes:` with `labels`) and by
// the Kubernetes node model (kube/), so both read the same labels alike.
//
//   std::map<std::string, std::string> labels = {{"fabric.topograph.run/tier-0", "leaf-3"}};
//   LabelPlace p = PlaceFromLabels(labels, {});   // p.names[kLeaf] == "leaf-3"
#pragma once

#include <array>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "berth/cluster/level.h"
#include "berth/common/status.h"

namespace berth::cluster {

struct BuiltinLabel {
  std::string_view key;
  Level level;
};

// The built-in keys, per level in priority order (the first present and
// non-empty one gives the level's domain name):
//   nvlink  accelerator.topograph.run/domain (with /sub-domain appended as
//           "DOMAIN/SUB" when present), network.topology.nvidia.com/accelerator,
//           nvidia.com/gpu.clique
//   leaf    fabric.topograph.run/tier-0, network.topology.nvidia.com/leaf,
//           network.topology.nvidia.com/block
//   spine   fabric.topograph.run/tier-1, network.topology.nvidia.com/spine
//   cluster topology.kubernetes.io/zone, network.topology.nvidia.com/datacenter
//   region  topology.kubernetes.io/region
// Fabric tiers above 1 and network.topology.nvidia.com/core are not read (one
// core layer per cluster); map them with an extra level if they matter.
std::span<const BuiltinLabel> BuiltinTopologyLabels();

inline constexpr std::string_view kAcceleratorDomainLabel = "accelerator.topograph.run/domain";
inline constexpr std::string_view kAcceleratorSubDomainLabel = "accelerator.topograph.run/sub-domain";

// A node's domain name at each level (indexed by Level; "" = the default
// domain of that level), and the label each came from ("" = none).
struct LabelPlace {
  std::array<std::string, kNumLevels> names;
  std::array<std::string, kNumLevels> keys;
};

// Reads the place from `labels`. `extra` (label -> level, like the `levels`
// of Kueue's and KAI's Topology) is checked first, in its order, then the
// built-in keys. Empty label values count as absent.
LabelPlace PlaceFromLabels(const std::map<std::string, std::string>& labels,
                           std::span<const std::pair<std::string, Level>> extra);

// Parses "LABEL=LEVEL" (e.g. "example.com/rack=leaf"; level names as
// ParseLevel). InvalidArgument naming the entry.
StatusOr<std::pair<std::string, Level>> ParseTopologyLabel(std::string_view text);

}  // namespace berth::cluster
