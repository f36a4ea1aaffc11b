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
#include <span>

#include "berth/cluster/cluster.h"
#include "berth/framework/cycle.h"
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
      if (free[i] < req.milli_per_gpu) continue;
      bool seen = false;
      for (int j = 0; j < i && !seen; ++j) seen = free[j] == free[i];
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

}  // namespace berth::plugins
