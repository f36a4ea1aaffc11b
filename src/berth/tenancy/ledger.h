// What each queue uses now and has used (decayed), and whether a queue may
// take more: the quota arithmetic of the queue tree (M7, M8). The scheduler
// owns one ledger and changes it only when a job starts or leaves; plugins
// read it (admission, fair-share order, reclaim).
//
//   Ledger ledger(std::move(tree), cluster);
//   int32_t q = ledger.QueueFor(job);                 // leaf (auto leaves made here)
//   Status s = ledger.CheckFits(q, type, 4000, extra); // may q take 4 more GPUs of `type`?
//   ledger.Charge(q, type, 4000, now);  ...  ledger.Uncharge(q, type, 4000, now);
//
// The rules (one dimension at a time: the job's GPU type, and all types
// together; a queue without a quota in a dimension is not constrained in it
// and is transparent: its subtree's use counts in its parent's).
//
// Each queue's subtree *holds* capacity of its parent: what it uses, plus the
// part of its guarantee it keeps back from lending (guarantee - lend_limit,
// when the queue uses less than that):
//   held(q)  = own charges of q + sum over children c of taken(c)
//   taken(q) = max(held(q), guarantee(q) - lend_limit(q))   (held(q) without a lending limit)
// Adding x milli-GPU to leaf l (CheckFits) walks from l up to the root:
//   1. limit: at every queue on the way, usage + x <= limit.
//   2. at each queue q with a quota, held(q) + growth <= guarantee(q): the
//      new use fits its guarantee, and is admitted (others' borrowing there
//      is reclaimed by preemption); only limits are checked further up.
//      Otherwise q borrows from its parent: held(q) + growth - guarantee(q)
//      <= borrow_limit(q); the growth of taken(q) goes up to the parent.
//   3. reaching the root still borrowing (some queue on the way has a quota
//      and none admitted it): the sum of taken() over the top queues must stay
//      within the cluster's GPUs of the dimension. That pool is what nobody
//      holds: idle guarantees within their lending limits, and capacity no
//      queue is guaranteed.
// So a queue borrows first inside its parent (siblings' idle guarantees, the
// parent's capacity guaranteed to no child), and beyond that the parent
// borrows for it from its own siblings, within the parent's borrowing limit.
// Worked example: top queues A (guarantee 10) and B (guarantee 10, lend_limit
// 2) on 20 GPUs; A's children A1 and A2 (guarantee 5 each; A2 lend_limit 0);
// nothing runs. B holds 8 (the part it does not lend), A2 holds 5 (it lends
// nothing). A1 may use its 5; beyond that A1 borrows, A (full: A2 lends
// nothing) borrows for it from the top pool, 20 - 10 - 8 = 2 GPUs (B's
// lendable part): A1 may reach 7, unless a borrowing limit stops it first.
//
// Units (units.h): with a tree in normalized units, every figure of the
// ledger (capacity, usage, held, quotas) is in milli-reference-GPU. A task of
// x milli-GPU on type t of job j counts Amount(j, t, x) = x x speed(j, t) /
// speed(j, reference); callers convert with Amount before CheckFits and
// Charge, so the check at placement sees what the job will be charged on the
// type it lands on. A type's capacity counts its GPUs at the speed of a job
// of no known class (SpeedModel::CapacityPerMillion).
//
// Entitlement (entitlement.h): with a tree whose `entitlement` is reachable,
// the scheduler reports every job it holds (AddDemand when submitted,
// RemoveDemand when it ends) and Advance recomputes each queue's entitled
// amount (in the unit) when the demand changed and the refresh interval has
// passed; entitled() is 0 for every queue otherwise (flat).
//
// Usage counts everything charged (in the unit), summed up the tree. Decayed
// usage integrates usage over time with an exponential half-life (fair share
// with history); it is advanced lazily by Charge/Uncharge/Advance.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/common/quantity.h"
#include "berth/common/status.h"
#include "berth/tenancy/budget.h"
#include "berth/tenancy/entitlement.h"
#include "berth/tenancy/queue_tree.h"
#include "berth/tenancy/units.h"

namespace berth::tenancy {

class Ledger {
 public:
  // `speeds` converts GPUs to the tree's unit when it is normalized (without
  // one, a normalized tree counts every GPU as one reference GPU).
  Ledger(QueueTree tree, const cluster::Cluster& cluster, TimeUs half_life = 0,
         std::shared_ptr<const SpeedModel> speeds = nullptr);

  const QueueTree& tree() const { return tree_; }
  Unit unit() const { return tree_.unit(); }
  bool normalized() const { return tree_.unit() == Unit::kNormalized; }
  // "GPUs", or "H100-equivalents" (for messages and reports).
  const std::string& unit_word() const { return unit_word_; }
  // `milli` milli-GPU of `type` held by `job`, in the ledger's unit (milli
  // itself when counting GPUs, or `type` is invalid).
  int64_t Amount(const job::JobSpec& job, GpuTypeId type, int64_t milli) const;
  // The least Amount over the GPU types of the cluster that some GPU group of
  // the job accepts (a necessary bound before the job is placed).
  int64_t LeastAmount(const job::JobSpec& job, int64_t milli) const;
  // The leaf a job is charged to; creates an auto leaf when the tree allows
  // (named by the job's queue, else its tenant, else "default"). -1: the job
  // maps to no queue.
  int32_t QueueFor(const job::JobSpec& job);
  // Dimension of a GPU type (its id); all_types_dim() for all types together.
  int32_t all_types_dim() const { return tree_.all_types_dim(); }
  int32_t num_dims() const { return tree_.num_dims(); }

  // OK, or ResourceExhausted naming the queue, the dimension, the limit hit
  // and the figures. `pending_extra` is what the caller already tentatively
  // added for the same queue (a gang's earlier tasks), not yet charged,
  // counted in both dimensions. An invalid `type` checks all types only.
  Status CheckFits(int32_t queue, GpuTypeId type, int64_t milli, int64_t pending_extra = 0) const;
  // The same with the tentative additions per dimension: `pending_type` in
  // `type`'s dimension, `pending_all` in all types (a gang spread over types).
  Status CheckFits(int32_t queue, GpuTypeId type, int64_t milli, int64_t pending_type, int64_t pending_all) const;
  // `milli` is in the ledger's unit; `gpu_milli` is the milli-GPU it stands
  // for (budgets in money price GPUs; -1: the same as `milli`).
  void Charge(int32_t queue, GpuTypeId type, int64_t milli, TimeUs now, int64_t gpu_milli = -1);
  void Uncharge(int32_t queue, GpuTypeId type, int64_t milli, TimeUs now, int64_t gpu_milli = -1);
  // The same, converting `milli` milli-GPU of `job` on `type` with Amount.
  void ChargeJob(int32_t queue, const job::JobSpec& job, GpuTypeId type, int64_t milli, TimeUs now) {
    Charge(queue, type, Amount(job, type, milli), now, milli);
  }

  // Budgets (budget.h): spend per period of the queues that have one, kept
  // up to date by Charge (O(depth)).
  const Budgets& budgets() const { return budgets_; }
  bool has_budgets() const { return budgets_.any(); }
  // The first queue from `leaf` up whose budget is spent at `now`, or -1.
  int32_t SpentBudget(int32_t leaf, TimeUs now) const { return budgets_.SpentOnPath(leaf, now); }
  // "GPU-hours", "H100-equivalent-hours" or "money" (q's budget's currency).
  std::string BudgetWord(int32_t q) const;
  // Why q's budget stops new work: "queue 'a': budget of 100 GPU-hours per
  // day spent (100.5 used since ...; renews at ...)".
  std::string BudgetWhy(int32_t q, TimeUs now) const;
  // A cluster GPU type's price (milli-money per GPU-hour; 0 unknown).
  int64_t price(GpuTypeId type) const {
    return type.valid() && type.value() < static_cast<int32_t>(price_.size()) ? price_[type.value()] : 0;
  }
  // Brings the decayed usage (and the integral of the entitlements) up to
  // `now`; recomputes a reachable entitlement when due.
  void Advance(TimeUs now);

  // Reachable entitlement (see above). The token is what to give back to
  // RemoveDemand (empty when the entitlement is flat).
  bool reachable_entitlement() const { return reachable_; }
  DemandToken AddDemand(int32_t queue, const job::JobSpec& job);
  void RemoveDemand(int32_t queue, const DemandToken& token);
  // A queue's entitled amount in the unit (milli) as of the last refresh: a
  // leaf's from the water-filling, a parent's the sum of its leaves'.
  double entitled(int32_t queue) const {
    return queue >= 0 && static_cast<size_t>(queue) < entitled_.size() ? entitled_[queue] : 0.0;
  }
  // The part of entitled(queue) on GPU type `type` (the water-filling's
  // result split over the node classes its demand fits: SplitByClass).
  double entitled_on(int32_t queue, GpuTypeId type) const {
    if (!type.valid() || type.value() >= tree_.num_types() || queue < 0) return 0.0;
    const size_t i = static_cast<size_t>(queue) * tree_.num_types() + type.value();
    return i < entitled_type_.size() ? entitled_type_[i] : 0.0;
  }
  // The integral of entitled() over time (unit x seconds), as of the last Advance.
  double entitled_seconds(int32_t queue) const {
    return queue >= 0 && static_cast<size_t>(queue) < entitled_seconds_.size() ? entitled_seconds_[queue] : 0.0;
  }
  const Entitlement& entitlement() const { return entitle_; }
  // Recomputes the entitlements now (Advance does it when due).
  void RefreshEntitlement();

  int64_t usage(int32_t queue, int32_t dim) const { return usage_[Index(queue, dim)]; }
  // The queue's guarantee in a dimension (0 when it has no quota there).
  int64_t guarantee(int32_t queue, int32_t dim) const;
  // Usage beyond the guarantee (0 when within it or without quota).
  int64_t borrowed(int32_t queue, int32_t dim) const;
  // What the queue's subtree holds of its parent's capacity (see above):
  // usage, plus the guarantees its descendants keep back from lending.
  int64_t held(int32_t queue, int32_t dim) const { return held_[Index(queue, dim)]; }
  // Capacity of the dimension that no top queue holds (negative when queues
  // came back within their guarantees while others borrowed: reclaim is due).
  int64_t unheld(int32_t dim) const { return capacity_[dim] - top_taken_[dim]; }
  // The cluster's capacity in a dimension (milli-GPU, or in the unit).
  int64_t capacity(int32_t dim) const { return capacity_[dim]; }
  // Decayed usage (unit x seconds) as of the last Advance.
  double decayed_usage(int32_t queue) const { return decayed_[queue]; }
  TimeUs half_life() const { return half_life_; }
  // Dominant share: max over dimensions of usage / capacity, over the weight.
  double DominantShare(int32_t queue) const;

  // Recomputes usage and held capacity from the queues' own charges and
  // compares (tests).
  Status CheckConsistency() const;
  std::string DimName(int32_t dim) const;

 private:
  size_t Index(int32_t queue, int32_t dim) const { return static_cast<size_t>(queue) * num_dims() + dim; }
  void Grow();  // after an auto leaf was added
  void AdvanceUsage(TimeUs now);
  void Add(int32_t queue, int32_t dim, int64_t delta);
  Status CheckDim(int32_t queue, int32_t dim, int64_t x) const;
  // taken() of a queue whose subtree holds `held` (see above).
  int64_t Taken(int32_t queue, int32_t dim, int64_t held) const;
  // held per queue x dim, and the sum of taken() over top queues per dim,
  // recomputed from `own` (post-order over the tree).
  void Recompute(const std::vector<int64_t>& own, std::vector<int64_t>& held, std::vector<int64_t>& top) const;

  QueueTree tree_;
  const cluster::Cluster* cluster_;
  std::shared_ptr<const SpeedModel> speeds_;  // null: GPUs (or factor 1)
  std::string unit_word_ = "GPUs";
  std::vector<int64_t> capacity_;  // per dim
  std::vector<int64_t> usage_;     // queue x dim, summed up the tree
  std::vector<int64_t> own_;       // queue x dim, charged to the queue itself (leaves)
  std::vector<int64_t> held_;      // queue x dim: own + sum of the children's taken()
  std::vector<int64_t> top_taken_; // per dim: sum of taken() over queues without a parent
  std::vector<double> decayed_;    // per queue
  std::vector<int64_t> price_;     // per GPU type: milli-money per GPU-hour (0: unknown)
  Budgets budgets_;
  Entitlement entitle_;
  bool reachable_ = false;
  std::vector<double> entitled_;          // per queue (milli-unit)
  std::vector<double> entitled_type_;     // queue x GPU type (milli-unit)
  std::vector<double> entitled_seconds_;  // per queue
  uint64_t solved_version_ = ~uint64_t{0};
  TimeUs last_refresh_ = 0;
  bool refreshed_ = false;
  TimeUs half_life_ = 0;           // 0: no decay (plain integral)
  TimeUs last_advance_ = 0;
  bool advanced_ = false;
};

}  // namespace berth::tenancy
