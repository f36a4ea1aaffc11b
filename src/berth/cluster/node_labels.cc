// The node-label table of the topology levels (see node_labels.h).
#include "berth/cluster/node_labels.h"

namespace berth::cluster {
namespace {

constexpr BuiltinLabel kBuiltin[] = {
    {kAcceleratorDomainLabel, Level::kNvlink},
    {"network.topology.nvidia.com/accelerator", Level::kNvlink},
    {"nvidia.com/gpu.clique", Level::kNvlink},
    {"fabric.topograph.run/tier-0", Level::kLeaf},
    {"network.topology.nvidia.com/leaf", Level::kLeaf},
    {"network.topology.nvidia.com/block", Level::kLeaf},
    {"fabric.topograph.run/tier-1", Level::kSpine},
    {"network.topology.nvidia.com/spine", Level::kSpine},
    {"topology.kubernetes.io/zone", Level::kCluster},
    {"network.topology.nvidia.com/datacenter", Level::kCluster},
    {"topology.kubernetes.io/region", Level::kRegion},
};

const std::string* Find(const std::map<std::string, std::string>& labels, std::string_view key) {
  auto it = labels.find(std::string(key));
  return it == labels.end() || it->second.empty() ? nullptr : &it->second;
}

}  // namespace

std::span<const BuiltinLabel> BuiltinTopologyLabels() { return kBuiltin; }

LabelPlace PlaceFromLabels(const std::map<std::string, std::string>& labels,
                           std::span<const std::pair<std::string, Level>> extra) {
  LabelPlace p;
  auto take = [&](std::string_view key, Level level) {
    const int l = static_cast<int>(level);
    if (!p.keys[l].empty()) return;
    const std::string* v = Find(labels, key);
    if (!v) return;
    p.names[l] = *v;
    p.keys[l] = std::string(key);
    if (key == kAcceleratorDomainLabel)
      if (const std::string* sub = Find(labels, kAcceleratorSubDomainLabel)) p.names[l] += "/" + *sub;
  };
  for (const auto& [key, level] : extra) take(key, level);
  for (const auto& b : kBuiltin) take(b.key, b.level);
  return p;
}

StatusOr<std::pair<std::string, Level>> ParseTopologyLabel(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size())
    return InvalidArgument("'" + std::string(text) + "': expected LABEL=LEVEL, e.g. example.com/rack=leaf");
  const std::optional<Level> level = ParseLevel(text.substr(eq + 1));
  if (!level)
    return InvalidArgument("'" + std::string(text) + "': unknown level '" + std::string(text.substr(eq + 1)) +
                           "' (region, cluster, spine, leaf, nvlink)");
  return std::pair<std::string, Level>(std::string(text.substr(0, eq)), *level);
}

}  // namespace berth::cluster
