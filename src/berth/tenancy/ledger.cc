// Quota arithmetic and usage accounting of the queue tree.
#include "berth/tenancy/ledger.h"

#include <algorithm>
#include <cmath>

namespace berth::tenancy {

Ledger::Ledger(QueueTree tree, const cluster::Cluster& cluster, TimeUs half_life)
    : tree_(std::move(tree)), cluster_(&cluster), half_life_(half_life) {
  capacity_.assign(tree_.num_dims(), 0);
  for (const auto& n : cluster.nodes()) {
    if (n.gpu_count == 0 || !n.gpu_type.valid() || n.gpu_type.value() >= tree_.num_types()) continue;
    capacity_[n.gpu_type.value()] += int64_t{n.gpu_count} * kMilliPerGpu;
    capacity_[tree_.all_types_dim()] += int64_t{n.gpu_count} * kMilliPerGpu;
  }
  Grow();
}

void Ledger::Grow() {
  const size_t want = static_cast<size_t>(tree_.size()) * num_dims();
  usage_.resize(want, 0);
  own_.resize(want, 0);
  decayed_.resize(tree_.size(), 0.0);
}

int32_t Ledger::QueueFor(const job::JobSpec& job) {
  int32_t q = tree_.LeafFor(job);
  if (q < 0 && tree_.auto_leaves()) {
    q = tree_.AutoLeaf(job.tenant);
    Grow();
  }
  return q;
}

int64_t Ledger::guarantee(int32_t queue, int32_t dim) const {
  const QueueNode& n = tree_.node(queue);
  return n.has_quota[dim] ? n.quota[dim].guarantee : 0;
}

int64_t Ledger::borrowed(int32_t queue, int32_t dim) const {
  if (!tree_.node(queue).has_quota[dim]) return 0;
  return std::max<int64_t>(0, usage(queue, dim) - guarantee(queue, dim));
}

void Ledger::Add(int32_t queue, int32_t dim, int64_t delta) {
  own_[Index(queue, dim)] += delta;
  for (int32_t q = queue; q >= 0; q = tree_.node(q).parent) usage_[Index(q, dim)] += delta;
}

void Ledger::Charge(int32_t queue, GpuTypeId type, int64_t milli, TimeUs now) {
  Advance(now);
  if (type.valid() && type.value() < tree_.num_types()) Add(queue, type.value(), milli);
  Add(queue, all_types_dim(), milli);
}

void Ledger::Uncharge(int32_t queue, GpuTypeId type, int64_t milli, TimeUs now) { Charge(queue, type, -milli, now); }

void Ledger::Advance(TimeUs now) {
  if (!advanced_) {
    advanced_ = true;
    last_advance_ = now;
    return;
  }
  if (now <= last_advance_) return;
  const double dt = UsToSeconds(now - last_advance_);
  last_advance_ = now;
  const int32_t all = all_types_dim();
  if (half_life_ <= 0) {
    for (int32_t q = 0; q < tree_.size(); ++q) decayed_[q] += static_cast<double>(usage(q, all)) * dt;
    return;
  }
  const double lambda = std::log(2.0) / UsToSeconds(half_life_);
  const double keep = std::exp(-lambda * dt);
  const double gain = (1.0 - keep) / lambda;
  for (int32_t q = 0; q < tree_.size(); ++q)
    decayed_[q] = decayed_[q] * keep + static_cast<double>(usage(q, all)) * gain;
}

double Ledger::DominantShare(int32_t queue) const {
  double share = 0;
  for (int32_t d = 0; d < num_dims(); ++d)
    if (capacity_[d] > 0) share = std::max(share, static_cast<double>(usage(queue, d)) / static_cast<double>(capacity_[d]));
  return share / tree_.node(queue).weight;
}

std::string Ledger::DimName(int32_t dim) const {
  if (dim == all_types_dim()) return "all GPU types";
  return cluster_->gpu_type(GpuTypeId(static_cast<int16_t>(dim))).name;
}

Status Ledger::CheckDim(int32_t queue, int32_t dim, int64_t x) const {
  const auto gpus = [](int64_t milli) {
    std::string s = std::to_string(milli / kMilliPerGpu);
    if (milli % kMilliPerGpu) s += "." + std::to_string(1000 + std::abs(milli % kMilliPerGpu)).substr(1);
    return s;
  };
  for (int32_t q = queue; q >= 0; q = tree_.node(q).parent) {
    const QueueNode& n = tree_.node(q);
    if (!n.has_quota[dim]) continue;
    const Quota& quota = n.quota[dim];
    const int64_t after = usage(q, dim) + x;
    const std::string where = "queue '" + n.name + "' (" + DimName(dim) + "): ";
    if (quota.limit != kUnlimited && after > quota.limit)
      return ResourceExhausted(where + "would use " + gpus(after) + " GPUs, over its limit of " + gpus(quota.limit));
    const int64_t excess = after - quota.guarantee;
    if (excess <= 0) continue;  // within its guarantee: always admitted (others' borrowing is reclaimed)
    if (quota.borrow_limit != kUnlimited && excess > quota.borrow_limit)
      return ResourceExhausted(where + "would borrow " + gpus(excess) + " GPUs, over its borrowing limit of " +
                               gpus(quota.borrow_limit));
    // The cohort: q and its siblings under the same parent.
    const int32_t parent = n.parent;
    std::vector<int32_t> roots;
    const std::vector<int32_t>* siblings = nullptr;
    if (parent >= 0) {
      siblings = &tree_.node(parent).children;
    } else {
      for (int32_t r = 0; r < tree_.size(); ++r)
        if (tree_.node(r).parent < 0) roots.push_back(r);
      siblings = &roots;
    }
    int64_t borrowed_sum = 0, lendable = 0, guaranteed = 0;
    for (int32_t s : *siblings) {
      const QueueNode& sn = tree_.node(s);
      const int64_t use = usage(s, dim) + (s == q ? x : 0);
      const int64_t g = sn.has_quota[dim] ? sn.quota[dim].guarantee : 0;
      guaranteed += g;
      borrowed_sum += std::max<int64_t>(0, use - g);
      int64_t idle = std::max<int64_t>(0, g - use);
      if (sn.has_quota[dim] && sn.quota[dim].lend_limit != kUnlimited) idle = std::min(idle, sn.quota[dim].lend_limit);
      lendable += idle;
    }
    const int64_t cap = parent >= 0 && tree_.node(parent).has_quota[dim] ? tree_.node(parent).quota[dim].guarantee
                                                                          : capacity_[dim];
    const int64_t pool = lendable + std::max<int64_t>(0, cap - guaranteed);
    if (borrowed_sum > pool)
      return ResourceExhausted(where + "would borrow " + gpus(excess) + " GPUs beyond its guarantee of " +
                               gpus(quota.guarantee) + "; its cohort lends " + gpus(pool) + " and borrows " +
                               gpus(borrowed_sum - excess) + " already");
  }
  return Status::Ok();
}

Status Ledger::CheckFits(int32_t queue, GpuTypeId type, int64_t milli, int64_t pending_extra) const {
  if (queue < 0 || queue >= tree_.size()) return InvalidArgument("no queue " + std::to_string(queue));
  if (type.valid() && type.value() < tree_.num_types())
    BERTH_RETURN_IF_ERROR(CheckDim(queue, type.value(), milli + pending_extra));
  return CheckDim(queue, all_types_dim(), milli + pending_extra);
}

Status Ledger::CheckConsistency() const {
  std::vector<int64_t> sum(usage_.size(), 0);
  for (int32_t q = 0; q < tree_.size(); ++q)
    for (int32_t d = 0; d < num_dims(); ++d)
      for (int32_t a = q; a >= 0; a = tree_.node(a).parent) sum[Index(a, d)] += own_[Index(q, d)];
  for (int32_t q = 0; q < tree_.size(); ++q)
    for (int32_t d = 0; d < num_dims(); ++d)
      if (sum[Index(q, d)] != usage_[Index(q, d)])
        return Internal("ledger: queue '" + tree_.node(q).name + "' " + DimName(d) + ": usage " +
                        std::to_string(usage_[Index(q, d)]) + ", recomputed " + std::to_string(sum[Index(q, d)]));
  return Status::Ok();
}

}  // namespace berth::tenancy
