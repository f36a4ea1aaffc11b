// FGD's fragmentation measure.
#include "berth/plugins/fgd/fragmentation.h"

#include <algorithm>

namespace berth::plugins::fgd {

FragModel::FragModel(const TypicalPods& typical, const cluster::Cluster& cluster) {
  entries_.reserve(typical.pods.size());
  for (const auto& p : typical.pods) {
    Entry e;
    e.cpu = p.shape.cpu_milli;
    e.milli = p.shape.milli_per_gpu;
    e.need = std::max<int32_t>(p.shape.gpus, 1);
    e.weight = p.weight;
    const cluster::Cluster::TypeSetParse parsed = cluster.ParseTypeSet(p.shape.gpu_spec);
    e.any_type = parsed.set.empty() && !parsed.unknown;
    e.types = parsed.set;
    entries_.push_back(e);
  }
}

FragAmounts FragModel::NodeAmounts(std::span<const MilliGpu> gpu_free, MilliCpu cpu_free, GpuTypeId type) const {
  FragAmounts d{};
  int64_t total = 0;
  for (MilliGpu g : gpu_free) total += g;
  const double total_d = static_cast<double>(total);
  for (const Entry& e : entries_) {
    if (e.milli == 0) {
      d[cpu_free >= e.cpu ? kXlSatisfied : kXrLackCpu] += e.weight * total_d;
      continue;
    }
    if (!e.any_type && !e.types.Contains(type)) {
      d[kNoAccess] += e.weight * total_d;
      continue;
    }
    int32_t fitting = 0;
    int64_t below = 0;
    for (MilliGpu g : gpu_free) {
      if (g >= e.milli) ++fitting;
      else below += g;
    }
    const bool gpu_fits = fitting >= e.need;
    const bool cpu_fits = cpu_free >= e.cpu;
    if (gpu_fits && cpu_fits) {
      d[kQ2LackGpu] += e.weight * static_cast<double>(below);
      d[kQ3Satisfied] += e.weight * static_cast<double>(total - below);
    } else {
      d[gpu_fits ? kQ4LackCpu : cpu_fits ? kQ2LackGpu : kQ1LackBoth] += e.weight * total_d;
    }
  }
  return d;
}

double FragModel::NodeFrag(std::span<const MilliGpu> gpu_free, MilliCpu cpu_free, GpuTypeId type) const {
  const FragAmounts d = NodeAmounts(gpu_free, cpu_free, type);
  double f = 0;
  for (int c = 0; c < kNumFragCategories; ++c)
    if (c != kQ3Satisfied) f += d[c];
  return f;
}

double FragModel::NodeFrag(const state::ClusterState& state, NodeId n) const {
  const cluster::Node& node = state.cluster().node(n);
  return NodeFrag({state.gpu_free_array(n), static_cast<size_t>(node.gpu_count)}, state.free_cpu(n), node.gpu_type);
}

ClusterFragmentation MeasureCluster(const FragModel& model, const state::ClusterState& state) {
  ClusterFragmentation out;
  const cluster::Cluster& c = state.cluster();
  out.capacity_milli = c.total_milli_gpu();
  for (int32_t i = 0; i < c.num_nodes(); ++i) {
    const NodeId n(i);
    if (!state.up(n)) continue;
    out.frag_milli += model.NodeFrag(state, n);
    out.idle_milli += state.node_free_milli(n);
  }
  return out;
}

ClusterFragmentation MeasureFragmentation(std::span<const job::JobSpec> workload, const state::ClusterState& state,
                                          int coverage_percent) {
  return MeasureCluster(FragModel(ComputeTypicalPods(workload, coverage_percent), state.cluster()), state);
}

}  // namespace berth::plugins::fgd
