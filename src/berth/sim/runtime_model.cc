// Placement-dependent runtime stretch (see runtime_model.h).
#include "berth/sim/runtime_model.h"

#include <algorithm>

namespace berth::sim {

Status RuntimeModel::Validate() const {
  if (!(comm_fraction >= 0 && comm_fraction <= 1)) return InvalidArgument("--comm-fraction must be in [0, 1]");
  for (double g : default_gbps)
    if (!(g > 0)) return InvalidArgument("runtime model: bandwidths must be positive");
  return Status::Ok();
}

std::optional<cluster::Level> RuntimeModel::SpannedLevel(const cluster::Cluster& c,
                                                         std::span<const framework::TaskPlacement> placements) {
  if (placements.empty()) return std::nullopt;
  const NodeId first = placements.front().alloc.node;
  bool one_node = true;
  int level = cluster::kNumLevels - 1;  // narrowest shared level so far
  for (const auto& p : placements) {
    if (p.alloc.node == first) continue;
    one_node = false;
    const auto& a = c.node(first).domain;
    const auto& b = c.node(p.alloc.node).domain;
    while (level > 0 && a[level] != b[level]) --level;
  }
  if (one_node) return std::nullopt;
  return static_cast<cluster::Level>(level);
}

double RuntimeModel::Stretch(const cluster::Cluster& c, std::span<const framework::TaskPlacement> placements) const {
  if (comm_fraction <= 0) return 1.0;
  const auto level = SpannedLevel(c, placements);
  if (!level) return 1.0;
  const int l = static_cast<int>(*level);
  const auto& dom = c.domain(c.node(placements.front().alloc.node).domain[l]);
  const auto& nvl = c.domain(c.node(placements.front().alloc.node).domain[cluster::kNumLevels - 1]);
  auto bw = [&](const cluster::Domain& d, int lev) {
    const double raw = d.bandwidth_gbps > 0 ? d.bandwidth_gbps : default_gbps[lev];
    return raw / std::max(1.0, d.oversubscription);
  };
  const double ratio = std::max(1.0, bw(nvl, cluster::kNumLevels - 1) / bw(dom, l));
  return 1.0 + comm_fraction * (ratio - 1.0);
}

}  // namespace berth::sim
