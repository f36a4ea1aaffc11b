// Where a task of a gang goes when in-place repair moves it off a failed
// node (docs/failures.md), and which nodes are kept as hot spares for such
// repairs: the one search that the service's repairs (node agents, virtual
// nodes) and Kubernetes mode (kubesched/kube_repair.h) share. The caller
// says which nodes are spares and which it may place on; the search and the
// spare rule are here.
//
//   RepairNodes nodes{.spare = [&](NodeId n) { return spare[n.value()]; },
//                     .usable = [&](NodeId n) { return healthy[n.value()]; }};
//   std::optional<RepairPick> pick = FindRepairTarget(cluster, st, gang, task, failed, nodes);
//   if (pick && pick->spare) ... un-spare pick->alloc.node, then Scheduler::RepairTask
//
// Order: within the task's NVLink domain when NVLink domains span nodes (the
// tensor-parallel group stays on NVLink); else its leaf, then spine, ... never
// wider than the narrowest domain holding the whole gang. In each domain a
// spare first (the lowest node id), then the free node that fits the task
// best (fewest whole GPUs left over; ties: the lowest id).
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/faults/handler.h"
#include "berth/framework/cycle.h"
#include "berth/state/cluster_state.h"

namespace berth::faults {

struct RepairNodes {
  // A hot spare kept idle for repairs (down for the scheduler); may be null.
  std::function<bool(NodeId)> spare;
  // A node the scheduler may place on now (healthy, not a spare, not
  // draining); the search also asks the state that it is up.
  std::function<bool(NodeId)> usable;
};

struct RepairPick {
  state::Allocation alloc;
  bool spare = false;  // alloc.node is a spare: the caller takes it out of the spares first
};

// A replacement for `task` (a placement of `gang`) that left node `failed`,
// or nullopt when no domain the gang may use holds it. The failed node
// itself is never picked. Nothing changes.
std::optional<RepairPick> FindRepairTarget(const cluster::Cluster& cluster, const state::ClusterState& st,
                                           std::span<const framework::TaskPlacement> gang,
                                           const framework::TaskPlacement& task, NodeId failed,
                                           const RepairNodes& nodes);

// The level spares are kept at (kLeaf or kSpine); nullopt for SpareMode::kNone.
std::optional<cluster::Level> SpareLevel(const SpareSetting& s);

// The nodes to set aside as new spares so that each domain at the spare
// level holds min(max(1, per_domain), its nodes / 2) of them: among the
// nodes that `may_become` one (empty and healthy, the caller says), the
// highest ids of each domain first. `is_spare` counts those there already.
// Domains in id order; an empty list for SpareMode::kNone.
std::vector<NodeId> SparesToAdd(const cluster::Cluster& cluster, const SpareSetting& s,
                                const std::function<bool(NodeId)>& is_spare,
                                const std::function<bool(NodeId)>& may_become);
// The same with the count each domain keeps from `want` (domain, its nodes;
// still at most half its nodes), and the spares beyond it to give back to
// work (the lowest ids of each domain first).
struct SpareChanges {
  std::vector<NodeId> add, release;
};
SpareChanges SpareChangesFor(const cluster::Cluster& cluster, const SpareSetting& s,
                             const std::function<bool(NodeId)>& is_spare,
                             const std::function<bool(NodeId)>& may_become,
                             const std::function<int32_t(DomainId, int32_t)>& want);

}  // namespace berth::faults
