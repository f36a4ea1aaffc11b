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
// CheckFits, for every queue from the leaf up to the root, in the job's GPU
// type dimension and in the all-types dimension, where that queue has a quota:
//   usage + x <= limit;
//   usage + x - guarantee <= borrow_limit;
//   borrowing fits the cohort: what the queue's siblings (the parent's
//   children) use beyond their guarantees, plus this queue's new excess, is at
//   most what they lend: the sum over siblings of min(idle guarantee, lend
//   limit), plus the parent's capacity not guaranteed to any child (the
//   parent's guarantee, or at the root the cluster's GPUs of that dimension,
//   minus the sum of the children's guarantees).
// Usage counts everything charged (milli-GPU), summed up the tree. Decayed
// usage integrates usage over time with an exponential half-life (fair share
// with history); it is advanced lazily by Charge/Uncharge/Advance.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/common/quantity.h"
#include "berth/common/status.h"
#include "berth/tenancy/queue_tree.h"

namespace berth::tenancy {

class Ledger {
 public:
  Ledger(QueueTree tree, const cluster::Cluster& cluster, TimeUs half_life = 0);

  const QueueTree& tree() const { return tree_; }
  // The leaf a job is charged to; creates an auto leaf when the tree allows.
  // -1: the job maps to no queue.
  int32_t QueueFor(const job::JobSpec& job);
  // Dimension of a GPU type (its id); all_types_dim() for all types together.
  int32_t all_types_dim() const { return tree_.all_types_dim(); }
  int32_t num_dims() const { return tree_.num_dims(); }

  // OK, or ResourceExhausted naming the queue, the dimension and the figures.
  // `pending_extra` is what the caller already tentatively added in the same
  // dimension for the same queue (a gang's earlier tasks), not yet charged.
  Status CheckFits(int32_t queue, GpuTypeId type, int64_t milli, int64_t pending_extra = 0) const;
  void Charge(int32_t queue, GpuTypeId type, int64_t milli, TimeUs now);
  void Uncharge(int32_t queue, GpuTypeId type, int64_t milli, TimeUs now);
  // Brings the decayed usage up to `now`.
  void Advance(TimeUs now);

  int64_t usage(int32_t queue, int32_t dim) const { return usage_[Index(queue, dim)]; }
  // The queue's guarantee in a dimension (0 when it has no quota there).
  int64_t guarantee(int32_t queue, int32_t dim) const;
  // Usage beyond the guarantee (0 when within it or without quota).
  int64_t borrowed(int32_t queue, int32_t dim) const;
  // The cluster's milli-GPU in a dimension.
  int64_t capacity(int32_t dim) const { return capacity_[dim]; }
  // Decayed usage (milli-GPU x seconds) as of the last Advance.
  double decayed_usage(int32_t queue) const { return decayed_[queue]; }
  TimeUs half_life() const { return half_life_; }
  // Dominant share: max over dimensions of usage / capacity, over the weight.
  double DominantShare(int32_t queue) const;

  // Recomputes usage from the leaves' own charges and compares (tests).
  Status CheckConsistency() const;
  std::string DimName(int32_t dim) const;

 private:
  size_t Index(int32_t queue, int32_t dim) const { return static_cast<size_t>(queue) * num_dims() + dim; }
  void Grow();  // after an auto leaf was added
  void Add(int32_t queue, int32_t dim, int64_t delta);
  Status CheckDim(int32_t queue, int32_t dim, int64_t x) const;

  QueueTree tree_;
  const cluster::Cluster* cluster_;
  std::vector<int64_t> capacity_;  // per dim
  std::vector<int64_t> usage_;     // queue x dim, summed up the tree
  std::vector<int64_t> own_;       // queue x dim, charged to the queue itself (leaves)
  std::vector<double> decayed_;    // per queue
  TimeUs half_life_ = 0;           // 0: no decay (plain integral)
  TimeUs last_advance_ = 0;
  bool advanced_ = false;
};

}  // namespace berth::tenancy
