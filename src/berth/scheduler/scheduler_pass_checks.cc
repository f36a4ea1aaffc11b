// The pass's cheap checks, read from counters and promises instead of a
// placement attempt: whether a job can fit the free GPUs at all (the
// capacity verdict), and whether the post-filters promise no preemption plan
// for all pending jobs, one leaf queue's or one job's.
#include <algorithm>
#include <charconv>
#include <cstring>
#include <string_view>

#include "berth/scheduler/scheduler.h"

namespace berth::scheduler {

using framework::Verdict;

namespace {
// Whether every post-filter promises no plan for the jobs `summary` stands for.
bool PromiseNoPlan(framework::Framework& framework, const framework::SchedulerView& view,
                   const framework::PendingSummary& summary) {
  for (auto* pf : framework.post_filter())
    if (!pf->NoPlanForAny(view, summary)) return false;
  return true;
}
}  // namespace

bool Scheduler::AdmitsObserveBlocked() const {
  for (const auto* a : framework_->admit())
    if (a->ObservesBlocked()) return true;
  return false;
}

bool Scheduler::NoPlanForAny(TimeUs now) {
  if (no_plan_epoch_ == epoch_) return no_plan_;
  no_plan_epoch_ = epoch_;
  no_plan_ = false;
  if (options_.full_pass || options_.full_scan || pending_priority_.empty()) return false;
  no_plan_ = PromiseNoPlan(*framework_, View(now), {pending_per_queue_, pending_priority_.rbegin()->first, pending_replicas_});
  return no_plan_;
}

bool Scheduler::NoPlanForQueue(int32_t queue, TimeUs now) {
  if (options_.full_pass || options_.full_scan || pending_priority_.empty() || queue < 0 ||
      queue >= static_cast<int32_t>(pending_per_queue_.size()) || pending_per_queue_[queue] <= 0)
    return false;
  if (queue >= static_cast<int32_t>(queue_promise_.size())) queue_promise_.resize(static_cast<size_t>(queue) + 1);
  QueuePromise& c = queue_promise_[queue];
  if (c.pass == pass_ && c.epoch == epoch_) return c.value;
  one_queue_.assign(static_cast<size_t>(queue) + 1, 0);
  one_queue_[queue] = pending_per_queue_[queue];
  c.pass = pass_;
  c.epoch = epoch_;
  c.value = PromiseNoPlan(*framework_, View(now), {one_queue_, pending_priority_.rbegin()->first, pending_replicas_});
  return c.value;
}

bool Scheduler::NoPlanForJob(int32_t index, TimeUs now) {
  const JobRecord& r = jobs_[index];
  if (options_.full_pass || options_.full_scan || r.queue < 0) return false;
  if (r.queue >= static_cast<int32_t>(queue_promise_.size())) queue_promise_.resize(static_cast<size_t>(r.queue) + 1);
  QueuePromise& c = queue_promise_[r.queue];
  const bool replica = demand_[index].counted_replica;
  if (c.job_pass == pass_ && c.job_epoch == epoch_ && c.job_priority == r.spec.priority && c.job_replica == replica)
    return c.job_value;
  one_queue_.assign(static_cast<size_t>(r.queue) + 1, 0);
  one_queue_[r.queue] = 1;
  c.job_pass = pass_;
  c.job_epoch = epoch_;
  c.job_priority = r.spec.priority;
  c.job_replica = replica;
  c.job_value = PromiseNoPlan(*framework_, View(now), {one_queue_, r.spec.priority, replica ? 1 : 0});
  return c.job_value;
}

bool Scheduler::CapacityBlocksAll() const {
  return pending_other_ == 0 && !pending_need_.empty() &&
         pending_need_.begin()->first > state_.free_full_gpus_total();
}

int64_t Scheduler::TasksThatFit(int32_t gpus, const cluster::GpuTypeSet& types) {
  if (!bucket_count_valid_) {
    bucket_count_.resize(type_max_.size());
    for (size_t t = 0; t < type_max_.size(); ++t) {
      bucket_count_[t].assign(type_max_[t].gpus + 1, 0);
      for (int32_t k = 1; k <= type_max_[t].gpus; ++k)
        bucket_count_[t][k] = state_.nodes_with_full_free(GpuTypeId(static_cast<int16_t>(t)), k).Count();
    }
    bucket_count_valid_ = true;
  }
  int64_t fit = 0;
  for (size_t t = 0; t < type_max_.size(); ++t) {
    if (!types.Accepts(GpuTypeId(static_cast<int16_t>(t)))) continue;
    for (int32_t k = gpus; k <= type_max_[t].gpus; ++k) fit += int64_t{bucket_count_[t][k]} * (k / gpus);
  }
  return fit;
}

// Two necessary conditions of TryPlace, judged on counters only:
//   - the job's whole GPUs are at most the free whole GPUs of the cluster;
//   - a group of k-GPU tasks with gang minimum m finds m tasks' room in the
//     free GPUs of up nodes of its types: sum over nodes of floor(free / k) >= m.
// The first failing sets the "capacity" verdict ("needs N GPUs, M free"). The
// second only skips a job whose verdict already comes from a full attempt,
// which stays as it was (the counters show nothing changed for the better);
// a job without one gets the full attempt, so its verdict names the reason.
// Statically infeasible jobs are left to TryPlace, which fails them.
bool Scheduler::CapacityShort(int32_t index) {
  Demand& d = demand_[index];
  if (!d.checkable || !d.whole_only) return false;
  JobRecord& rec = jobs_[index];
  const int64_t free = state_.free_full_gpus_total();
  if (d.whole_gpus > free) {
    // Written only when it differs: a long queue keeps the same few texts.
    char text[64] = "needs ";
    char* end = text + 6;
    end = std::to_chars(end, text + sizeof text, d.whole_gpus).ptr;
    std::memcpy(end, " GPUs, ", 7);
    end = std::to_chars(end + 7, text + sizeof text, free).ptr;
    std::memcpy(end, " free", 5);
    const std::string_view reason(text, static_cast<size_t>(end + 5 - text));
    Verdict& v = rec.last_verdict;
    if (v.code != framework::VerdictCode::kUnschedulable || v.plugin != "capacity" || !v.rejects.empty() ||
        v.reason != reason) {
      v.code = framework::VerdictCode::kUnschedulable;
      v.plugin.assign("capacity");
      v.rejects.clear();
      v.reason.assign(reason);
    }
    d.full_verdict = false;
    d.capacity_free = free;
    return true;
  }
  if (!d.full_verdict) return false;
  for (const auto& g : rec.spec.groups) {
    if (g.gpus == 0 || g.gang_min() == 0) continue;
    if (g.gpus == 1 && g.gpu_types.empty()) continue;  // the cluster-wide count above covers it
    if (TasksThatFit(g.gpus, g.gpu_types) < g.gang_min()) return true;
  }
  return false;
}

}  // namespace berth::scheduler
