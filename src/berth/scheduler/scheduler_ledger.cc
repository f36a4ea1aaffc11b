// The scheduler's queue-tree bookkeeping: charging the ledger for a run's
// placements, whether a run is beyond its queues' guarantees (best effort),
// and the times a waiting job's chances change without an event (a budget's
// renewal, a victim's guard expiring).
#include <bit>

#include "berth/scheduler/scheduler.h"

#include "berth/common/bits.h"

namespace berth::scheduler {

int64_t Scheduler::ChargeLedger(const JobRecord& rec, int64_t sign, TimeUs now) {
  ++epoch_;
  int64_t charged = 0;
  for (const auto& p : rec.placements) {
    const int64_t milli = int64_t{PopCount(p.alloc.gpu_mask)} * p.alloc.milli_per_gpu;
    if (milli == 0) continue;
    const GpuTypeId type = cluster_.node(p.alloc.node).gpu_type;
    const int64_t amount = ledger_.Amount(rec.spec, type, milli);
    ledger_.Charge(rec.queue, type, sign * amount, now, sign * milli);
    charged += amount;
  }
  return charged;
}

bool Scheduler::BeyondGuarantee(const JobRecord& rec) const {
  const tenancy::QueueTree& tree = ledger_.tree();
  if (rec.queue < 0 || rec.queue >= tree.size()) return false;
  auto beyond = [&](int32_t dim) {
    bool quota = false;
    for (int32_t q = rec.queue; q >= 0; q = tree.node(q).parent) {
      if (!tree.node(q).has_quota[dim]) continue;
      if (ledger_.usage(q, dim) <= ledger_.guarantee(q, dim)) return false;
      quota = true;
    }
    return quota;
  };
  if (beyond(ledger_.all_types_dim())) return true;
  for (const auto& p : rec.placements) {
    const GpuTypeId t = cluster_.node(p.alloc.node).gpu_type;
    if (t.valid() && t.value() < tree.num_types() && p.alloc.total_milli() > 0 && beyond(t.value())) return true;
  }
  return false;
}

TimeUs Scheduler::NextBudgetRenewal(TimeUs now) const {
  TimeUs next = -1;
  for (int32_t q : budget_blocked_) {
    const TimeUs t = ledger_.budgets().NextRenewal(q, now);
    if (t > now && (next < 0 || t < next)) next = t;
  }
  return next;
}

TimeUs Scheduler::NextGuardExpiry(TimeUs now) const {
  if (pending_replica_jobs_ == 0) return -1;
  const framework::SchedulerView view = View(now);
  TimeUs next = -1;
  for (const framework::PostFilterPlugin* pf : framework_->post_filter()) {
    const TimeUs t = pf->NextGuardExpiry(view);
    if (t > now && (next < 0 || t < next)) next = t;
  }
  return next;
}

}  // namespace berth::scheduler
