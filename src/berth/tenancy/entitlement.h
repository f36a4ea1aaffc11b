// Reachable entitlement: what each leaf queue is entitled to when its jobs can
// use only part of the fleet (queue file `entitlement: reachable`,
// docs/queues.md). A flat share (weight / sum of weights of the capacity) is
// not receivable by a queue whose jobs are 8-GPU gangs when a third of the
// GPUs sit on 2-GPU nodes; this computes a weighted max-min fair share over
// the capacity each queue's jobs fit.
//
// Node classes: the cluster's nodes grouped by (GPU type, GPUs per node), in
// order of first appearance; a class's capacity is in the ledger's unit (its
// milli-GPU, or milli-reference-GPU at the speed model's capacity factor). A
// task group fits a class when the type is accepted and a node of the class
// holds one task (shares: any node of an accepted type).
//
// Demand: every job in the system (pending or running) adds, per GPU group,
// its gang's GPUs to its leaf queue under the group's fit mask (the set of
// classes it fits). Demand is kept in milli-GPU and converted to the unit at
// the mean capacity speed of its mask (capacity in the unit / GPUs over the
// classes of the mask).
//
// Water-filling (WaterFill): every queue with demand gets e(q) = min(w(q) x
// level, demand(q)) as the level rises, until a set of classes K is full:
// the part of the entitlements that only K can serve,
//   sum over q of max(0, e(q) - demand of q that fits some class outside K),
// reaches capacity(K) (Hall's condition of the flow network queue -> mask ->
// class; with C classes there are 2^C sets). The queues that need more of a
// full set, and those whose demand is met, stop; the others keep rising. The
// result is the weighted max-min fair allocation; capacity no demand fits is
// entitled to nobody. Worked example: 4 GPUs on 2-GPU nodes (class s) and 8
// on 8-GPU nodes (class b), queues A (8-GPU jobs: mask {b}) and B (1-GPU jobs:
// mask {s,b}), equal weights, large demands: the level rises to 6 (A = B = 6
// needs 6 of b for A and 12 of s and b together: all). With A's weight 3,
// K = {b} fills first, at level 8/3 (A = 8): A stops; B rises to 4 (the rest).
//
// Hierarchy (FillTree): the water-filling runs level by level. The root's
// children share the whole capacity by their weights, each with the demand of
// its subtree; each child's entitlement is then split over the classes
// (SplitByClass) and that split is the capacity its own children share, and so
// on down to the leaves. So what one subtree cannot use goes to its siblings
// first, and only then to the rest of the tree. A parent's entitlement is the
// sum of its leaves'. With every leaf under the root this is one WaterFill.
// Deterministic: classes and masks in fixed order, no hashing.
// Cost: O(2^C x queues x masks) per rising step, at most one step per queue;
// with more than kMaxClasses classes the entitlement falls back to flat
// weighted shares (usable() false).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/job/job.h"
#include "berth/tenancy/units.h"

namespace berth::tenancy {

// The input of WaterFill: per class its capacity, per queue its weight (> 0)
// and its demand by fit mask (bit c = class c), all in one unit.
struct FillProblem {
  std::vector<double> capacity;  // per class
  struct Queue {
    double weight = 1;
    std::map<uint32_t, double> demand;  // mask -> amount
  };
  std::vector<Queue> queues;
};
// The weighted max-min fair entitlement of each queue (see above).
std::vector<double> WaterFill(const FillProblem& problem);
// A split of entitlements `e` (WaterFill's) over the classes that the demand
// admits: x[q][c], with sum over c of x[q][c] = e[q] and sum over q of
// x[q][c] <= capacity[c]. A maximum flow source -> queue (e) -> mask
// (demand) -> class -> sink (capacity), by shortest augmenting paths in a
// fixed arc order (one of the possible splits, always the same).
std::vector<std::vector<double>> SplitByClass(const FillProblem& problem, const std::vector<double>& e);

// The hierarchical fill. parent[q] (-1: under the root) and weight[q] per
// node of a tree, demand[q] by fit mask (leaves), capacity per class. Returns
// per node its entitlement (e) and its split over the classes (split[q][c]).
struct TreeFill {
  std::vector<double> e;
  std::vector<std::vector<double>> split;
};
TreeFill FillTree(const std::vector<double>& capacity, const std::vector<int32_t>& parent,
                  const std::vector<double>& weight, const std::vector<std::map<uint32_t, double>>& demand);

// What a job added to the demand (to take back the same when it leaves).
struct DemandToken {
  std::vector<std::pair<uint32_t, int64_t>> parts;  // (mask, milli-GPU)
  bool empty() const { return parts.empty(); }
};

class Entitlement {
 public:
  static constexpr int kMaxClasses = 12;

  Entitlement() = default;
  // Classes of `cluster`, capacities in the unit of `speeds` (null: GPUs).
  Entitlement(const cluster::Cluster& cluster, const SpeedModel* speeds);

  bool usable() const { return usable_; }
  int32_t num_classes() const { return static_cast<int32_t>(classes_.size()); }
  struct NodeClass {
    GpuTypeId type;
    int32_t gpus_per_node = 0;
    int64_t gpu_milli = 0;  // GPUs of the class
    int64_t capacity = 0;   // in the unit
  };
  const NodeClass& node_class(int32_t c) const { return classes_[c]; }
  // The classes a group's tasks fit (0: none).
  uint32_t FitMask(const job::TaskGroup& group) const;
  // The demand of a job, per GPU group (mask 0 groups are left out).
  DemandToken DemandOf(const job::JobSpec& job) const;

  // Adds (sign +1) or removes (-1) a job's demand on leaf `queue`.
  void Add(int32_t queue, const DemandToken& token, int sign);
  // Demand changes since construction (a refresh is due when it moved).
  uint64_t version() const { return version_; }
  // Demand of a queue in the unit (tests, reports).
  double DemandIn(int32_t queue) const;

  // Entitlements of `num_queues` leaves with these weights (0 for a queue
  // without demand; sized num_queues).
  std::vector<double> Solve(const std::vector<double>& leaf_weights) const;
  // The water-filling problem of the current demand (Solve = WaterFill of it).
  FillProblem Problem(const std::vector<double>& leaf_weights) const;

 private:
  double SpeedOf(uint32_t mask) const;  // unit per GPU over the mask's classes

  bool usable_ = false;
  std::vector<NodeClass> classes_;
  std::vector<std::map<uint32_t, int64_t>> demand_;  // per queue: mask -> milli-GPU
  uint64_t version_ = 0;
};

}  // namespace berth::tenancy
