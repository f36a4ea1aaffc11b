// ClusterState: what is free and who holds what, with incremental indexes.
//
// Apply(event) is the only mutator. It validates the event first and changes
// nothing when it fails. Every index below is kept exact by Apply and can be
// checked against a full recomputation with CheckIndexes() (the tests do).
//
// Indexes (only nodes that are up count as free capacity):
//   - per GPU: free milli-GPU (0 for a GPU that is down); unallocated GPU
//     memory (the type's memory less the gpu_memory_mib of the tasks on it);  per node: free CPU, memory, milli-GPU, fully
//     free GPU count and mask, a change counter (for score caches);
//   - per topology domain: fully free GPUs;
//   - per GPU type: fully free GPUs, free milli-GPU;
//   - per GPU type and k: the set of up nodes with exactly k fully free GPUs
//     (a bitset, so "the first node with >= k free" is a word scan);
//   - per GPU type and share class c: the set of up nodes with at least one
//     partially used GPU whose free milli-GPU f (0 < f < 1000) has
//     f / kShareClassWidth == c (so shares find partly used GPUs that fit
//     without visiting every node).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "berth/common/bits.h"
#include "berth/cluster/cluster.h"
#include "berth/common/bitset.h"
#include "berth/common/status.h"
#include "berth/state/events.h"
#include "berth/state/task_table.h"

namespace berth::state {

// Width in milli-GPU of one share class (see the partial-GPU index above).
inline constexpr MilliGpu kShareClassWidth = 32;
inline constexpr int kNumShareClasses = (kMilliPerGpu + kShareClassWidth - 1) / kShareClassWidth;

// An estimate of the heap and object bytes of a ClusterState, by part.
struct StateMemory {
  size_t per_gpu = 0;      // free milli per GPU
  size_t per_node = 0;     // per-node arrays, the task lists' headers
  size_t indexes = 0;      // per-domain/type counters and the node bitsets
  size_t task_records = 0;  // the allocation of each task, and its index
  size_t task_lists = 0;    // the per-node lists of tasks
  size_t total() const { return per_gpu + per_node + indexes + task_records + task_lists; }
};

class ClusterState {
 public:
  explicit ClusterState(const cluster::Cluster& cluster);
  ClusterState(const ClusterState&) = default;  // a what-if copy

  Status Apply(const Event& event);
  // Checks an event without applying it.
  Status Check(const Event& event) const;

  const cluster::Cluster& cluster() const { return *cluster_; }

  // --- per node ---
  bool up(NodeId n) const { return up_[n.value()]; }
  MilliCpu free_cpu(NodeId n) const { return free_cpu_[n.value()]; }
  MiB free_memory(NodeId n) const { return free_mem_[n.value()]; }
  MilliGpu gpu_free(NodeId n, int local_gpu) const {
    return gpu_free_[cluster_->node(n).first_gpu + local_gpu];
  }
  // Free milli-GPU of every GPU of node n, in index order.
  const MilliGpu* gpu_free_array(NodeId n) const { return &gpu_free_[cluster_->node(n).first_gpu]; }
  // Unallocated memory of one GPU (MiB): its type's memory less what tasks
  // that stated gpu_memory_mib hold (a type of unknown memory has 0).
  MiB gpu_memory_free(NodeId n, int local_gpu) const {
    return gpu_mem_free_[cluster_->node(n).first_gpu + local_gpu];
  }
  // Whether GPU g of node n has `milli` free milli-GPU and `mem` MiB of
  // unallocated memory (mem 0: memory not asked for, always holds).
  bool GpuHolds(NodeId n, int g, MilliGpu milli, MiB mem) const {
    const int32_t i = cluster_->node(n).first_gpu + g;
    return gpu_free_[i] >= milli && (mem <= 0 || gpu_mem_free_[i] >= mem);
  }
  // Whether node n has `gpus` GPUs of a type with at least `mem` MiB, each
  // with `milli` free and `mem` unallocated (for whole GPUs: fully free ones).
  // The GPU-memory test of the fit filter, shared by every placement path.
  bool GpuMemoryFits(NodeId n, int32_t gpus, MilliGpu milli, MiB mem) const;
  MilliGpu node_free_milli(NodeId n) const { return node_free_milli_[n.value()]; }
  int32_t full_free_gpus(NodeId n) const { return PopCount(full_free_mask_[n.value()]); }
  uint64_t full_free_mask(NodeId n) const { return full_free_mask_[n.value()]; }
  uint64_t node_version(NodeId n) const { return node_version_[n.value()]; }
  // Counts the changes Apply made (any node): equal versions, equal state.
  uint64_t version() const { return version_; }
  // GPUs of node n that are down (SetGpuUp), as a node-local bitmask.
  uint64_t gpu_down_mask(NodeId n) const { return gpu_down_mask_[n.value()]; }
  // Tasks on node n, in no particular order (it depends on the history of
  // places and releases: sort before deciding by it). A place appends, a
  // release moves the last task into the hole: both constant time.
  const std::vector<TaskKey>& tasks_on(NodeId n) const { return tasks_on_[n.value()]; }

  // --- per domain / type / cluster ---
  int64_t domain_full_free_gpus(DomainId d) const { return domain_full_free_[d.value()]; }
  int64_t type_full_free_gpus(GpuTypeId t) const { return type_full_free_[t.value()]; }
  int64_t type_free_milli(GpuTypeId t) const { return type_free_milli_[t.value()]; }
  // Up nodes of type t with exactly k fully free GPUs.
  const DenseBitset& nodes_with_full_free(GpuTypeId t, int k) const { return buckets_[t.value()][k]; }
  // The largest k for which nodes_with_full_free(t, k) exists (the most GPUs
  // of type t on one node).
  int max_full_free(GpuTypeId t) const { return static_cast<int>(buckets_[t.value()].size()) - 1; }
  // Up nodes of type t with a partially used GPU in share class c
  // (0 <= c < kNumShareClasses).
  const DenseBitset& nodes_with_share_class(GpuTypeId t, int c) const { return share_buckets_[t.value()][c]; }
  static int ShareClassOf(MilliGpu free) { return free / kShareClassWidth; }
  int64_t allocated_milli() const { return allocated_milli_; }
  int64_t free_full_gpus_total() const { return free_full_total_; }
  int64_t num_tasks() const { return static_cast<int64_t>(allocs_.size()); }

  // The allocation of a task, or nullptr. Valid until the next Apply.
  const Allocation* Find(TaskKey task) const { return allocs_.Find(task); }

  // Recomputes every index from the allocations and compares. OK when equal;
  // otherwise Internal naming the first index that differs.
  Status CheckIndexes() const;

  // What this state occupies on the heap: every buffer (vector capacities,
  // the hash map's nodes and buckets) as a glibc malloc block. The object
  // itself and the cluster model are not counted.
  StateMemory Memory() const;
  size_t MemoryBytes() const { return Memory().total(); }

 private:
  struct Indexes;  // a recomputation, used by CheckIndexes
  void AddNodeToIndexes(NodeId n, int sign);
  void RebucketNode(NodeId n, uint64_t old_mask, bool was_up);
  Status CheckPlace(const PlaceTask& e) const;

  const cluster::Cluster* cluster_;
  // Per GPU (global index).
  std::vector<MilliGpu> gpu_free_;
  std::vector<MiB> gpu_mem_free_;  // unallocated GPU memory; the type's memory when no task states any
  // Per node.
  std::vector<uint8_t> up_;
  std::vector<MilliCpu> free_cpu_;
  std::vector<MiB> free_mem_;
  std::vector<MilliGpu> node_free_milli_;
  std::vector<uint64_t> full_free_mask_;
  std::vector<uint64_t> node_version_;
  std::vector<uint64_t> gpu_down_mask_;  // per node: GPUs down; each has gpu_free_ 0 and holds no task
  std::vector<std::vector<TaskKey>> tasks_on_;
  // Per domain, per type.
  std::vector<int64_t> domain_full_free_;
  std::vector<int64_t> type_full_free_;
  std::vector<int64_t> type_free_milli_;
  std::vector<std::vector<DenseBitset>> buckets_;  // [type][k]
  std::vector<std::vector<DenseBitset>> share_buckets_;  // [type][share class]
  int64_t allocated_milli_ = 0;
  int64_t free_full_total_ = 0;
  uint64_t version_ = 0;
  TaskTable allocs_;  // looked up, never iterated for decisions
};

}  // namespace berth::state
