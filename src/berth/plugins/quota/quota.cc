// The quota plugin: admission and per-task checks against the queue tree.
#include "berth/plugins/quota/quota.h"

#include <algorithm>
#include <bit>

#include "berth/common/bits.h"
#include "berth/tenancy/ledger.h"

namespace berth::plugins {

using framework::Verdict;

void QuotaPlugin::Reset() {
  job_ = JobId();
  tentative_.clear();
  std::fill(pending_.begin(), pending_.end(), 0);
  pending_all_ = 0;
  filter_job_ = JobId();
  filter_task_ = -1;
}

void QuotaPlugin::Counters(framework::PluginCounters& out) const {
  out.emplace_back("quota.refused_admit", static_cast<double>(refused_admit_));
  out.emplace_back("quota.refused_reserve", static_cast<double>(refused_reserve_));
}

// Necessary conditions only (Reserve decides task by task): the gang minimum
// fits the all-types quotas, and, when every GPU of the job must be of one
// type (its groups accept only that type of the cluster), that type's quotas.
Verdict QuotaPlugin::Admit(const job::JobSpec& job, const state::ClusterState& state, TimeUs now) {
  Reset();
  if (!ledger_) return Verdict::Success();
  const int32_t queue = ledger_->tree().LeafFor(job);
  if (queue < 0) return Verdict::Success();
  int64_t need = 0;
  uint64_t usable = 0;  // cluster types some GPU group accepts
  const int32_t num_types = ledger_->tree().num_types();
  for (const auto& g : job.groups) {
    if (g.gpus == 0) continue;
    need += int64_t{g.gang_min()} * g.gpus * g.milli_per_gpu;
    for (int32_t t = 0; t < num_types && t < cluster::kMaxGpuTypes; ++t)
      if (g.gpu_types.Accepts(GpuTypeId(static_cast<int16_t>(t)))) usable |= uint64_t{1} << t;
  }
  if (need <= 0) return Verdict::Success();
  GpuTypeId only;  // invalid: the all-types dimension alone
  if (PopCount(usable) == 1) only = GpuTypeId(static_cast<int16_t>(std::countr_zero(usable)));
  // In normalized units the charge depends on the type the job lands on: the
  // least it could be charged (necessary, like the rest of Admit).
  need = only.valid() ? ledger_->Amount(job, only, need) : ledger_->LeastAmount(job, need);
  Status s = ledger_->CheckFits(queue, only, need);
  if (s.ok()) return Verdict::Success();
  ++refused_admit_;
  return Verdict::Unschedulable(std::string(kName), s.message());
}

bool QuotaPlugin::Filter(const framework::CycleContext& ctx, const framework::TaskRequest& req, NodeId node) const {
  const tenancy::Ledger* ledger = ctx.ledger;
  if (!ledger || ctx.queue < 0 || req.gpus == 0) return true;
  const GpuTypeId type = ctx.state.cluster().node(node).gpu_type;
  const int32_t num_types = ledger->tree().num_types();
  if (!type.valid() || type.value() >= num_types) return true;
  // The cache lives from one Admit to the next (without Admit in the profile, no cache).
  if (!ledger_ || filter_job_ != ctx.job.id || filter_task_ != ctx.task_index) {
    filter_job_ = ctx.job.id;
    filter_task_ = ctx.task_index;
    filter_type_ok_.assign(num_types, -1);
  }
  int8_t& ok = filter_type_ok_[type.value()];
  if (ok < 0) {
    const bool mine = job_ == ctx.job.id;  // tentative charges belong to this gang
    const int64_t pending_type =
        mine && type.value() < static_cast<int32_t>(pending_.size()) ? pending_[type.value()] : 0;
    const int64_t pending_all = mine ? pending_all_ : 0;
    const int64_t milli = ledger->Amount(ctx.job, type, req.total_milli());
    ok = ledger->CheckFits(ctx.queue, type, milli, pending_type, pending_all).ok() ||
         !ledger->CheckFits(ctx.queue, GpuTypeId(), milli, 0, pending_all).ok();
  }
  return ok != 0;
}

Verdict QuotaPlugin::Reserve(const framework::CycleContext& ctx, const state::Allocation& alloc) {
  if (ctx.job.id != job_) {
    Reset();
    job_ = ctx.job.id;
  }
  const tenancy::Ledger* ledger = ctx.ledger;
  if (!ledger || ctx.queue < 0 || alloc.total_milli() <= 0) return Verdict::Success();
  const GpuTypeId type = ctx.state.cluster().node(alloc.node).gpu_type;
  const int64_t milli = ledger->Amount(ctx.job, type, alloc.total_milli());  // in the ledger's unit
  const int32_t num_types = ledger->tree().num_types();
  const int32_t dim = type.valid() && type.value() < num_types ? type.value() : -1;
  if (static_cast<int32_t>(pending_.size()) < num_types) pending_.resize(num_types, 0);
  Status s = ledger->CheckFits(ctx.queue, type, milli, dim >= 0 ? pending_[dim] : 0, pending_all_);
  if (!s.ok()) {
    ++refused_reserve_;
    return Verdict::Unschedulable(std::string(kName), s.message());
  }
  tentative_.push_back({ctx.task_index, dim, milli});
  if (dim >= 0) pending_[dim] += milli;
  pending_all_ += milli;
  return Verdict::Success();
}

void QuotaPlugin::Unreserve(const framework::CycleContext& ctx, const state::Allocation& alloc) {
  if (ctx.job.id != job_) return;
  auto it = std::find_if(tentative_.begin(), tentative_.end(),
                         [&](const Tentative& t) { return t.task == ctx.task_index; });
  if (it == tentative_.end()) return;  // its Reserve refused it (or never ran)
  if (it->dim >= 0) pending_[it->dim] -= it->milli;
  pending_all_ -= it->milli;
  tentative_.erase(it);
}

}  // namespace berth::plugins
