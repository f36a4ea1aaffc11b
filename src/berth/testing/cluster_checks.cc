// Structural checks of a built Cluster.
#include "berth/testing/cluster_checks.h"

#include <string>

namespace berth::testing {

using cluster::Cluster;
using cluster::Domain;
using cluster::Level;

Status CheckClusterInvariants(const Cluster& c) {
  const int32_t n = c.num_nodes();
  size_t domains_seen = 0;
  for (int l = 0; l < cluster::kNumLevels; ++l) {
    const std::string level = cluster::LevelName(static_cast<Level>(l));
    int32_t next = 0;
    for (DomainId d : c.domains_at(static_cast<Level>(l))) {
      ++domains_seen;
      const Domain& dom = c.domain(d);
      const std::string what = level + " '" + dom.name + "'";
      if (static_cast<int>(dom.level) != l) return Internal(what + ": listed under the wrong level");
      if (dom.begin.value() != next) return Internal(what + ": range does not start where the previous ended");
      if (dom.end.value() <= dom.begin.value()) return Internal(what + ": empty range");
      next = dom.end.value();
      int64_t gpus = 0;
      for (int32_t i = dom.begin.value(); i < dom.end.value(); ++i) {
        gpus += c.node(NodeId(i)).gpu_count;
        if (c.node(NodeId(i)).domain[l] != d) return Internal(what + ": node " + std::to_string(i) + " points elsewhere");
      }
      if (gpus != dom.gpus) return Internal(what + ": GPU count differs from its nodes");
      if (l == 0) {
        if (dom.parent.valid()) return Internal(what + ": a region has a parent");
      } else {
        if (!dom.parent.valid()) return Internal(what + ": no parent");
        const Domain& p = c.domain(dom.parent);
        if (static_cast<int>(p.level) != l - 1) return Internal(what + ": parent is not one level up");
        if (dom.begin < p.begin || dom.end > p.end) return Internal(what + ": range outside its parent");
      }
    }
    if (next != n) return Internal(level + " domains do not cover every node");
  }
  if (domains_seen != c.domains().size()) return Internal("domains missing from the per-level lists");
  int32_t gpu = 0;
  int64_t total = 0;
  for (int32_t i = 0; i < n; ++i) {
    const auto& node = c.node(NodeId(i));
    if (node.first_gpu != gpu) return Internal("node " + node.name + ": GPUs not numbered node by node");
    for (int g = 0; g < node.gpu_count; ++g)
      if (c.NodeOfGpu(gpu + g) != NodeId(i)) return Internal("node " + node.name + ": NodeOfGpu disagrees");
    if (node.gpu_count > 0 && !node.gpu_type.valid()) return Internal("node " + node.name + ": GPUs without a type");
    if (c.FindNode(node.name) != NodeId(i)) return Internal("node " + node.name + ": name look-up disagrees");
    gpu += node.gpu_count;
    total += node.gpu_count;
  }
  if (total != c.total_gpus()) return Internal("total GPUs differ from the nodes' sum");
  return Status::Ok();
}

}  // namespace berth::testing
