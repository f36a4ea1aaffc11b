// What a preemptor needs (its task shapes) and the room on nodes once some
// running jobs are tentatively evicted: the arithmetic both victim searches
// use to decide whether a victim set lets the job fit.
//
//   std::optional<GangNeed> need = GangNeed::From(job);   // nullopt: GPU shares
//   Room room;  room.Attach(state);
//   room.Evict(running[v], +1, begin, end);   // tentatively, inside [begin, end)
//   int32_t k = room.Slots(node, need->shapes[0]);
//   room.Clear();
//
// A GPU counts as free when its free milli-GPU plus what tentative evictions
// give back on it make a whole GPU; whole-GPU tasks need whole free GPUs on
// one node, and CPU and memory on that node. A task that states GPU memory
// fits only on nodes whose GPU type has that much (a whole free GPU has all of
// its memory free; evictions never make a GPU bigger).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "berth/framework/cycle.h"

namespace berth::plugins::preempt {

// Tasks of one shape (identical groups merged).
struct TaskShape {
  int32_t gpus = 0;  // whole GPUs per task (0: CPU-only)
  MilliCpu cpu = 0;
  MiB mem = 0;
  cluster::GpuTypeSet types;
  int32_t count = 0;  // tasks needed (gang minimums)
  MiB gpu_memory = 0;  // GPU memory per GPU (gpu_memory_mib; 0: not stated)
};

struct GangNeed {
  std::vector<TaskShape> shapes;  // by GPUs per task, most first
  int64_t gpus = 0;               // whole GPUs needed in all
  int32_t tasks = 0;

  // The job's needs, or nullopt when it has a GPU-share group or a type the
  // cluster lacks (the searches handle whole-GPU and CPU-only tasks). A
  // service replica's share is sought as one whole GPU (it reclaims a GPU).
  static std::optional<GangNeed> From(const job::JobSpec& job);
};

class Room {
 public:
  // Binds to a state (scratch sized to its cluster) and forgets everything.
  // Nodes marked in `ruled_out` (per node id; empty: none) hold no task.
  void Attach(const state::ClusterState& state, std::span<const uint8_t> ruled_out = {});

  // Gives back (sign +1) or takes back (-1) what `v` holds on nodes in
  // [begin, end); appends the nodes changed to `changed` (may repeat) when set.
  void Evict(const framework::RunningJob& v, int sign, int32_t begin, int32_t end,
             std::vector<int32_t>* changed = nullptr);
  // Reserves one task of `shape` on n (the lowest free GPUs); the node must
  // hold it (Slots(n, shape) >= 1).
  void Reserve(NodeId n, const TaskShape& shape);

  // Tasks of `shape` that node n holds now (free + evicted - reserved).
  int32_t Slots(NodeId n, const TaskShape& shape) const;
  // The same with extra room on n: `extra_mask` GPUs made free, `cpu`, `mem`.
  int32_t SlotsWith(NodeId n, const TaskShape& shape, uint64_t extra_mask, MilliCpu cpu, MiB mem) const;
  // Whole GPUs free on n now, as a node-local mask.
  uint64_t FreeMask(NodeId n) const;
  // GPUs of n that become whole and free if, on top of the current room,
  // `milli[g]` more milli-GPU is given back on GPU g (g < gpu_count).
  uint64_t MaskWithExtra(NodeId n, const int32_t* milli) const;

  // Whether the nodes in [begin, end) hold every shape's tasks now (greedy:
  // node by node, shapes with the most GPUs first; exact for one shape).
  bool Fits(const GangNeed& need, int32_t begin, int32_t end) const;
  // Sum over nodes in [begin, end) of Slots(n, shape).
  int64_t SlotsIn(const TaskShape& shape, int32_t begin, int32_t end) const;

  // Nodes changed since the last Clear().
  const std::vector<int32_t>& Touched() const { return touched_; }
  // Forgets every tentative eviction and reservation.
  void Clear();

 private:
  void Touch(int32_t n);
  const state::ClusterState* state_ = nullptr;
  std::span<const uint8_t> ruled_out_;
  std::vector<int32_t> freed_milli_;  // per GPU (global index): shares given back
  std::vector<uint64_t> extra_mask_;  // per node: GPUs made whole and free by evictions
  std::vector<uint64_t> reserved_mask_;
  std::vector<MilliCpu> cpu_;         // per node: freed - reserved
  std::vector<MiB> mem_;
  std::vector<uint8_t> touched_flag_;
  std::vector<int32_t> touched_;
};

// Tasks of `shape` that fit in `gpus` whole GPUs, `cpu` and `mem` (a cap of
// 1<<20 when the shape asks for nothing).
int32_t TasksThatFit(const TaskShape& shape, int32_t gpus, MilliCpu cpu, MiB mem);

}  // namespace berth::plugins::preempt
