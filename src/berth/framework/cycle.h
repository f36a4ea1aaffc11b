// What every plugin sees in one scheduling cycle: the task being placed, the
// state as it stands (including the tasks of this gang already reserved), the
// cycle's random generator and tie-break ranking, and the clock.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "berth/cluster/gpu_type.h"
#include "berth/common/ids.h"
#include "berth/common/quantity.h"
#include "berth/common/rng.h"
#include "berth/job/job.h"
#include "berth/state/cluster_state.h"

namespace berth::framework {

// One task's request, flattened for the hot path.
struct TaskRequest {
  int32_t gpus = 0;
  MilliGpu milli_per_gpu = kMilliPerGpu;
  MilliCpu cpu_milli = 0;
  MiB memory_mib = 0;
  cluster::GpuTypeSet gpu_types;  // empty = any
  bool gpu_types_unknown = false; // asked only for types the cluster lacks

  static TaskRequest FromGroup(const job::TaskGroup& g) {
    return {g.gpus, g.milli_per_gpu, g.cpu_milli, g.memory_mib, g.gpu_types, g.gpu_types_unknown};
  }
  bool is_sharing() const { return gpus == 1 && milli_per_gpu < kMilliPerGpu; }
  MilliGpu total_milli() const { return gpus * milli_per_gpu; }
};

// A job waiting in the queue, as queue-sort plugins see it.
struct QueuedJob {
  const job::JobSpec* spec = nullptr;
  int64_t seq = 0;          // submission order, the final tie-break
  TimeUs enqueue_time = 0;  // when it (re)entered the queue
  double attained_gpu_seconds = 0;  // service received so far (LAS)
};

struct CycleContext {
  const state::ClusterState& state;
  const job::JobSpec& job;
  int32_t task_index = 0;  // within the job
  int32_t group = 0;
  Rng& rng;
  TimeUs now = 0;
  // Tie-break rank per node id (lower wins); empty = by node id.
  std::span<const int32_t> node_rank;

  int32_t RankOf(NodeId n) const { return node_rank.empty() ? n.value() : node_rank[n.value()]; }
};

}  // namespace berth::framework
