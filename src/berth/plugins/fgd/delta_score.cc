// The caches of DeltaScorePlugin (see delta_score.h).
#include "berth/plugins/fgd/delta_score.h"

namespace berth::plugins {

std::optional<uint64_t> DeltaScorePlugin::SelectGpus(const framework::CycleContext& ctx,
                                                     const framework::TaskRequest& req, NodeId n) const {
  if (!req.is_sharing()) return std::nullopt;
  const DeltaOutcome o = Evaluate(ctx.state, req, n);
  if (o.gpu < 0) return std::nullopt;
  return uint64_t{1} << o.gpu;
}

std::vector<DeltaScorePlugin::Slot>& DeltaScorePlugin::SlotsFor(const framework::TaskRequest& req) const {
  const ShapeKey key{req.cpu_milli, req.gpus == 0 ? 0 : req.milli_per_gpu, req.gpus, req.gpu_memory_mib};
  if (key != last_key_ || last_shape_ < 0) {
    auto [it, inserted] = shape_index_.emplace(key, static_cast<int32_t>(slots_.size()));
    if (inserted) slots_.emplace_back(measure_.size());
    last_key_ = key;
    last_shape_ = it->second;
  }
  return slots_[last_shape_];
}

double DeltaScorePlugin::CachedNodeMeasure(const state::ClusterState& state, NodeId n) const {
  const uint64_t version = state.node_version(n);
  if (measure_version_[n.value()] != version) {
    measure_[n.value()] = NodeMeasure(state, n);
    measure_version_[n.value()] = version;
  }
  return measure_[n.value()];
}

DeltaOutcome DeltaScorePlugin::Evaluate(const state::ClusterState& state, const framework::TaskRequest& req,
                                        NodeId n) const {
  if (req.gpus == 0 && req.cpu_milli == 0 && req.memory_mib == 0) {
    if (auto fixed = EmptyTaskScore()) return {*fixed, -1};
  }
  if (state_ != &state) {
    state_ = &state;
    const size_t nodes = static_cast<size_t>(state.cluster().num_nodes());
    measure_version_.assign(nodes, kNever);
    measure_.assign(nodes, 0);
    shape_index_.clear();
    slots_.clear();
    last_shape_ = -1;
  }
  Slot& slot = SlotsFor(req)[n.value()];
  const uint64_t version = state.node_version(n);
  if (slot.version != version) {
    const GpuTypeId type = state.cluster().node(n).gpu_type;
    slot.outcome = ScoreByDelta(
        state, req, n, CachedNodeMeasure(state, n),
        [&](std::span<const MilliGpu> free, MilliCpu cpu) { return Measure(free, cpu, type); },
        [&](double drop) { return ToScore(drop); });
    slot.version = version;
  }
  return slot.outcome;
}

}  // namespace berth::plugins
