// The replacement search of in-place repair and the spare rule (see
// repair_target.h).
#include "berth/faults/repair_target.h"

#include <climits>

namespace berth::faults {

std::optional<RepairPick> FindRepairTarget(const cluster::Cluster& cluster, const state::ClusterState& st,
                                           std::span<const framework::TaskPlacement> gang,
                                           const framework::TaskPlacement& task, NodeId failed,
                                           const RepairNodes& nodes) {
  const cluster::Node& home = cluster.node(failed);
  const std::optional<cluster::Level> spanned = SpannedLevel(cluster, gang);
  const int widest = spanned ? static_cast<int>(*spanned) : cluster::kNumLevels - 1;
  const cluster::Domain& nv = cluster.domain(home.domain[cluster::kNumLevels - 1]);
  const bool nvlink_bound = !cluster.single_node_nvlink() && nv.end.value() - nv.begin.value() > 1;
  const int first = nvlink_bound ? cluster::kNumLevels - 1 : static_cast<int>(cluster::Level::kLeaf);
  const int last = nvlink_bound ? cluster::kNumLevels - 1 : widest;
  for (int l = first; l >= last && l >= 0; --l) {
    const cluster::Domain& dom = cluster.domain(home.domain[l]);
    if (nodes.spare) {
      for (int32_t k = dom.begin.value(); k < dom.end.value(); ++k) {
        const NodeId n(k);
        if (n == failed || !nodes.spare(n)) continue;
        if (auto a = FitTaskOn(cluster, st, task.alloc, n, st.gpu_down_mask(n))) return RepairPick{*a, true};
      }
    }
    std::optional<state::Allocation> best;
    int32_t best_left = INT32_MAX;
    for (int32_t k = dom.begin.value(); k < dom.end.value(); ++k) {
      const NodeId n(k);
      if (n == failed || !st.up(n) || (nodes.spare && nodes.spare(n)) || !nodes.usable(n)) continue;
      auto a = FitTaskOn(cluster, st, task.alloc, n, st.gpu_down_mask(n));
      if (!a) continue;
      const int32_t left = st.full_free_gpus(n) - a->gpu_count();
      if (left < best_left) {
        best_left = left;
        best = a;
      }
    }
    if (best) return RepairPick{*best, false};
  }
  return std::nullopt;
}

std::optional<cluster::Level> SpareLevel(const SpareSetting& s) {
  if (s.mode == SpareMode::kLeaf) return cluster::Level::kLeaf;
  if (s.mode == SpareMode::kSpine) return cluster::Level::kSpine;
  return std::nullopt;
}

std::vector<NodeId> SparesToAdd(const cluster::Cluster& cluster, const SpareSetting& s,
                                const std::function<bool(NodeId)>& is_spare,
                                const std::function<bool(NodeId)>& may_become) {
  return SpareChangesFor(cluster, s, is_spare, may_become,
                         [&](DomainId, int32_t) { return std::max(1, s.per_domain); })
      .add;
}

SpareChanges SpareChangesFor(const cluster::Cluster& cluster, const SpareSetting& s,
                             const std::function<bool(NodeId)>& is_spare,
                             const std::function<bool(NodeId)>& may_become,
                             const std::function<int32_t(DomainId, int32_t)>& want_of) {
  SpareChanges out;
  const std::optional<cluster::Level> level = SpareLevel(s);
  if (!level) return out;
  for (DomainId d : cluster.domains_at(*level)) {
    const cluster::Domain& dom = cluster.domain(d);
    const int32_t m = dom.end.value() - dom.begin.value();
    const int32_t want = std::min(want_of(d, m), m / 2);
    int32_t have = 0;
    for (int32_t k = dom.begin.value(); k < dom.end.value(); ++k)
      if (is_spare(NodeId(k))) ++have;
    for (int32_t k = dom.begin.value(); k < dom.end.value() && have > want; ++k) {
      if (!is_spare(NodeId(k))) continue;
      out.release.push_back(NodeId(k));
      --have;
    }
    for (int32_t k = dom.end.value() - 1; k >= dom.begin.value() && have < want; --k) {
      if (is_spare(NodeId(k)) || !may_become(NodeId(k))) continue;
      out.add.push_back(NodeId(k));
      ++have;
    }
  }
  return out;
}

}  // namespace berth::faults
