// Scoring a task on a node by how much a node-level measure drops when the
// task lands there — the shape shared by FGD (fragmentation) and berth-frag
// (expected waste). The measure sees the node's free milli per GPU and CPU
// left after the placement:
//   - a share tries each fitting GPU (a GPU with the same free milli as an
//     earlier one is skipped: it would score the same and lose the tie) and
//     keeps the best, lowest index on ties;
//   - whole GPUs are taken in ascending free milli, stable by index.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <tuple>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/framework/cycle.h"
#include "berth/framework/plugin.h"
#include "berth/state/cluster_state.h"

namespace berth::plugins {

struct DeltaOutcome {
  int64_t score = 0;
  int32_t gpu = -1;  // shares: the GPU that won
};

// `measure(std::span<const MilliGpu> free_after, MilliCpu cpu_after)` -> double;
// `to_score(double drop)` -> int64_t, where drop = before - measure(after).
template <typename Measure, typename ToScore>
DeltaOutcome ScoreByDelta(const state::ClusterState& state, const framework::TaskRequest& req, NodeId n,
                          double before, Measure&& measure, ToScore&& to_score) {
  const int k = state.cluster().node(n).gpu_count;
  const MilliGpu* free = state.gpu_free_array(n);
  MilliGpu after[cluster::kMaxGpusPerNode];
  std::copy(free, free + k, after);
  const std::span<const MilliGpu> view(after, static_cast<size_t>(k));
  const MilliCpu cpu_after = state.free_cpu(n) - req.cpu_milli;
  if (req.is_sharing()) {
    DeltaOutcome best;
    for (int i = 0; i < k; ++i) {
      if (!state.GpuHolds(n, i, req.milli_per_gpu, req.gpu_memory_mib)) continue;
      bool seen = false;
      for (int j = 0; j < i && !seen; ++j)
        seen = free[j] == free[i] && state.GpuHolds(n, j, req.milli_per_gpu, req.gpu_memory_mib);
      if (seen) continue;
      after[i] = free[i] - req.milli_per_gpu;
      const int64_t s = to_score(before - measure(view, cpu_after));
      after[i] = free[i];
      if (best.gpu < 0 || s > best.score) best = {s, i};
    }
    return best;
  }
  if (req.gpus > 0) {
    int order[cluster::kMaxGpusPerNode];
    for (int i = 0; i < k; ++i) order[i] = i;
    std::stable_sort(order, order + k, [&](int a, int b) { return free[a] < free[b]; });
    int32_t need = req.gpus;
    for (int i = 0; i < k && need > 0; ++i) {
      if (after[order[i]] >= req.milli_per_gpu) {
        after[order[i]] -= req.milli_per_gpu;
        --need;
      }
    }
  }
  return {to_score(before - measure(view, cpu_after)), -1};
}

// A score plugin built on ScoreByDelta, with the caches both fgd and
// berth-frag need: the node measure only changes when the node does, and a
// task's outcome on a node depends only on the node's state and the task's
// shape (CPU, milli, GPU count), so both are cached per node and stamped with
// ClusterState::node_version(n). A subclass supplies the measure and the score.
class DeltaScorePlugin : public framework::ScorePlugin {
 public:
  int64_t Score(const framework::CycleContext& ctx, const framework::TaskRequest& req, NodeId n) const override {
    return Evaluate(ctx.state, req, n).score;
  }
  // The score is a function of the node's state and the task's shape (the
  // measure is fixed when the plugin is built), with no normalization.
  bool NodeLocal() const override { return true; }
  // A share takes the GPU that won inside its score.
  std::optional<uint64_t> SelectGpus(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                                     NodeId n) const override;

 protected:
  // The measure of node n as it stands.
  virtual double NodeMeasure(const state::ClusterState& state, NodeId n) const = 0;
  // The measure of a node of GPU type `type` with `free` milli per GPU and `cpu` left.
  virtual double Measure(std::span<const MilliGpu> free, MilliCpu cpu, GpuTypeId type) const = 0;
  // The score of a drop of the measure.
  virtual int64_t ToScore(double drop) const = 0;
  // The score of a task that asks for nothing, if it is fixed.
  virtual std::optional<int64_t> EmptyTaskScore() const { return std::nullopt; }

 private:
  static constexpr uint64_t kNever = ~uint64_t{0};
  struct Slot {
    uint64_t version = kNever;
    DeltaOutcome outcome;
  };
  using ShapeKey = std::tuple<MilliCpu, MilliGpu, int32_t, MiB>;

  DeltaOutcome Evaluate(const state::ClusterState& state, const framework::TaskRequest& req, NodeId n) const;
  double CachedNodeMeasure(const state::ClusterState& state, NodeId n) const;
  std::vector<Slot>& SlotsFor(const framework::TaskRequest& req) const;

  // Valid for the state last seen (another ClusterState resets them).
  mutable const state::ClusterState* state_ = nullptr;
  mutable std::vector<uint64_t> measure_version_;
  mutable std::vector<double> measure_;
  mutable std::map<ShapeKey, int32_t> shape_index_;
  mutable std::vector<std::vector<Slot>> slots_;  // [shape][node]
  mutable ShapeKey last_key_{-1, -1, -1, -1};
  mutable int32_t last_shape_ = -1;
};

}  // namespace berth::plugins
