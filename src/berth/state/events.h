// The events that change cluster state. ClusterState::Apply is the only
// mutator; the scheduler, the simulator and the server all speak these.
#pragma once

#include <cstdint>
#include <variant>

#include "berth/common/bits.h"
#include "berth/common/ids.h"
#include "berth/common/quantity.h"

namespace berth::state {

// What one task holds on one node.
struct Allocation {
  NodeId node;
  uint64_t gpu_mask = 0;     // node-local GPU indexes the task uses
  MilliGpu milli_per_gpu = 0;  // taken from each GPU of the mask
  MilliCpu cpu_milli = 0;
  MiB memory_mib = 0;
  MiB gpu_memory_mib = 0;      // GPU memory taken from each GPU of the mask (0: not stated)

  int gpu_count() const { return PopCount(gpu_mask); }
  MilliGpu total_milli() const { return gpu_count() * milli_per_gpu; }
  bool is_sharing() const { return gpu_count() == 1 && milli_per_gpu < kMilliPerGpu; }
  bool operator==(const Allocation&) const = default;
};

// A task starts holding `alloc`.
struct PlaceTask {
  TaskKey task;
  Allocation alloc;
};

// A task gives back everything it holds.
struct ReleaseTask {
  TaskKey task;
};

// A node becomes (un)schedulable: failed, drained or cordoned, or back. Tasks
// already on it stay recorded until released.
struct SetNodeUp {
  NodeId node;
  bool up = true;
};

// One GPU of a node fails or comes back; the node keeps its other GPUs. A GPU
// may go down only while no task holds any of it (release its tasks first); a
// down GPU offers no capacity (free milli 0, not fully free) until it is up.
struct SetGpuUp {
  NodeId node;
  int32_t gpu = 0;  // node-local index
  bool up = true;
};

using Event = std::variant<PlaceTask, ReleaseTask, SetNodeUp, SetGpuUp>;

}  // namespace berth::state
