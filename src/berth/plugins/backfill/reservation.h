// Reservation math for backfill: the earliest time a blocked job's whole-GPU
// demand fits, node by node, as running jobs end at their predicted times.
//
// The planner sees, per node, its GPU type and the whole GPUs free now (0 for
// down nodes), and a list of future releases (time, node, GPUs) - one per
// whole-GPU placement of a running job, at the job's predicted end. It walks
// the releases in time order and stops at the first time S (the shadow time)
// where the demand fits on the nodes' free GPUs: for a group of k-GPU tasks,
// sum over nodes of the accepted types of floor(free / k) must reach its gang
// minimum. Example: 4 nodes x 8 GPUs, node 3 free, nodes 0-1 held by a job
// until 2h, node 2 held until 1h; a job of 3 x 8 GPUs fits at S = 2h (at 1h
// only two whole nodes are free). At S it is given nodes (the set R): those
// with the fewest GPUs free now first, so that what is free now stays
// available to jobs that run past S. Here R = {0, 1, 2}; node 3 is spare.
//
// Earlier reservations of the same pass are holds: their nodes' GPUs are
// taken during [start, end). A later job must fit for its whole predicted run
// beside every hold that overlaps it (conservative: a hold counts over the
// whole overlap).
//
// Only whole GPUs are planned: shares of a GPU and CPU-only tasks are not
// reserved (a share does not free a whole GPU when it ends), CPU and memory
// are not checked, and topology constraints (required levels, blocks) are
// ignored. With several task groups the node choice is greedy (largest tasks
// first), so a fit that needs a cleverer packing is found later or not at all.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "berth/cluster/gpu_type.h"
#include "berth/common/ids.h"
#include "berth/common/quantity.h"
#include "berth/job/job.h"

namespace berth::plugins::backfill {

// What a job needs in whole GPUs: per group, `tasks` tasks of `gpus` GPUs on
// nodes of the accepted types (empty set: any).
struct GpuDemand {
  struct Group {
    int32_t gpus = 0;
    int32_t tasks = 0;
    cluster::GpuTypeSet types;
  };
  std::vector<Group> groups;

  // The whole-GPU groups of a job at their gang minimum (shares and CPU-only
  // groups are left out).
  static GpuDemand Of(const job::JobSpec& job);
  bool empty() const { return groups.empty(); }
  int64_t total_gpus() const;
  // True when some group accepts GPU type t.
  bool Accepts(GpuTypeId t) const;
};

struct NodeGpus {
  int32_t node = 0;
  int32_t gpus = 0;
};

struct Release {
  TimeUs time = 0;
  int32_t node = 0;
  int32_t gpus = 0;
};

// An earlier reservation: it takes `nodes` during [start, end).
struct Hold {
  TimeUs start = 0;
  TimeUs end = 0;
  std::vector<NodeGpus> nodes;
};

// The cluster's future as the planner sees it. Fill the per-node arrays (all
// of the same size) and the releases, then call Prepare() once.
struct Timeline {
  std::vector<GpuTypeId> type;    // per node; invalid for nodes without GPUs
  std::vector<int32_t> free_now;  // per node: whole GPUs free now (0 when down)
  std::vector<int32_t> rank;      // per node: tie-break, lower first
  std::vector<Release> releases;  // any order until Prepare

  // Sorts the releases by time.
  void Prepare();
  int32_t num_nodes() const { return static_cast<int32_t>(free_now.size()); }
};

struct ReservationPlan {
  TimeUs start = 0;             // the shadow time S (>= now)
  std::vector<NodeGpus> nodes;  // R: the GPUs the job takes on each node at S, by node
  int64_t free_at_start = 0;    // whole GPUs of the accepted types free at S, beside the holds
  int64_t extra = 0;            // free_at_start minus the demand: spare at S
};

// The earliest time >= now at which `demand` fits for `runtime` beside the
// holds, or nullopt when it does not fit even after every release (the nodes
// that are up cannot hold it). start == now means it fits now.
std::optional<ReservationPlan> EarliestStart(const Timeline& timeline, const GpuDemand& demand, TimeUs now,
                                             TimeUs runtime, std::span<const Hold> holds = {});

}  // namespace berth::plugins::backfill
