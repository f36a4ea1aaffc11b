// Preemption in the scheduling loop: the victim search for a blocked job
// (TryPreempt), the yield point of a victim, and eviction.
#include "berth/scheduler/scheduler.h"

#include <algorithm>

namespace berth::scheduler {

using framework::CycleContext;
using framework::TaskPlacement;
using framework::TaskRequest;
using framework::Verdict;
using job::JobState;

framework::Verdict Scheduler::TryPreempt(int32_t index, Verdict&& verdict, TimeUs now) {
  JobRecord& rec = jobs_[index];
  const framework::SchedulerView view = View(now);
  // The filters' node rules (FilterPlugin::RulesOut): the nodes a
  // reservation rules the job out of whatever is evicted, and those it would
  // rather not see evicted for (tried without them first); the nodes where
  // the job is at one of its own limits are left out of every try.
  std::span<const uint8_t> ruled_out;
  std::span<const uint8_t> avoided;
  std::span<const uint8_t> limited;
  if (!framework_->post_filter().empty()) {
    const size_t nodes = static_cast<size_t>(cluster_.num_nodes());
    bool reservation = false;
    for (auto* f : framework_->filter()) {
      const framework::NodeRuleKind kind = f->NodeRule();
      if (kind == framework::NodeRuleKind::kLimit) {
        if (limited.empty()) limit_scratch_.assign(nodes, 0);
        if (f->RulesOut(view, rec.spec, limit_scratch_)) limited = limit_scratch_;
      } else if (kind == framework::NodeRuleKind::kReservation) {
        if (!reservation) {
          ruled_out_scratch_.assign(nodes, 0);
          avoid_scratch_.assign(nodes, 0);
          reservation = true;
        }
        f->RulesOut(view, rec.spec, ruled_out_scratch_);
        f->Avoids(view, rec.spec, avoid_scratch_);
      }
    }
    if (reservation) {
      bool any_avoided = false;
      for (size_t n = 0; n < nodes; ++n) {
        any_avoided = any_avoided || (avoid_scratch_[n] && !ruled_out_scratch_[n]);
        avoid_scratch_[n] = avoid_scratch_[n] || ruled_out_scratch_[n];
      }
      ruled_out = ruled_out_scratch_;
      if (any_avoided) avoided = avoid_scratch_;
    }
  }
  // A try's nodes: the reservation's (or none) with the limits' added.
  auto with_limits = [&](std::span<const uint8_t> base, std::vector<uint8_t>& scratch) -> std::span<const uint8_t> {
    if (limited.empty()) return base;
    scratch.assign(limited.begin(), limited.end());
    for (size_t n = 0; n < base.size() && n < scratch.size(); ++n) scratch[n] = scratch[n] || base[n];
    return scratch;
  };
  auto any_of = [](std::span<const uint8_t> m) { return std::find(m.begin(), m.end(), uint8_t{1}) != m.end(); };
  const int tiers = avoided.empty() ? 1 : 2;
  for (int tier = 0; tier < tiers; ++tier) {
    const std::span<const uint8_t> base = tier + 1 < tiers ? avoided : ruled_out;
    const std::span<const uint8_t> nodes_out = with_limits(base, tier_scratch_);
    const bool confined = any_of(base);
    for (auto* pf : framework_->post_filter()) {
      framework::PreemptContext ctx{rec.spec,    rec.queue, verdict, view, rec.preempted_by, Queued(index),
                                    nodes_out, confined};
      std::optional<framework::PreemptionPlan> plan = pf->PostFilter(ctx);
      if (!plan || plan->victims.empty()) continue;
      // Validate the whole plan before touching anything: every victim running.
      bool valid = true;
      for (JobId v : plan->victims) {
        const int32_t* it = index_of_.Find(v);
        valid = valid && it != nullptr && jobs_[*it].state == JobState::kRunning && v != rec.spec.id;
      }
      if (!valid) {
        verdict.reason += "; " + std::string(pf->Name()) + " proposed a victim that is not running";
        continue;
      }
      std::vector<JobId> evict;
      if (options_.elastic_resize && plan->shrink_elastic && ShrinkForJob(index, plan->victims, evict)) {
        log_.Preempted(now, rec.spec.id, {}, plan->reason + " (shrank elastic jobs instead)");
        rec.startup_delay += options_.preemption_grace;
        return Verdict::Success();
      }
      if (evict.empty()) evict = plan->victims;
      // The preemptor works once the slowest victim has yielded.
      TimeUs delay = 0;
      for (JobId v : evict) {
        const int32_t vi = *index_of_.Find(v);
        if (jobs_[vi].state != JobState::kRunning) continue;
        const YieldPoint y = YieldOf(vi, now);
        delay = std::max(delay, y.delay);
        Status s = Evict(vi, rec.spec.id, /*defer_requeue=*/true, &y);
        assert(s.ok());
        (void)s;
      }
      bucket_count_valid_ = false;
      log_.Preempted(now, rec.spec.id, evict, plan->reason);
      Verdict placed = TryPlace(rec);
      if (placed.ok()) {
        rec.startup_delay += delay;
        return placed;
      }
      // The plan freed room the placement could not use: say so; the victims stay requeued.
      placed.reason += " (after preempting " + std::to_string(plan->victims.size()) + " jobs for it: " + plan->reason + ")";
      return placed;
    }
  }
  if (!framework_->post_filter().empty()) {
    framework::PreemptContext ctx{rec.spec, rec.queue, verdict, view, rec.preempted_by, Queued(index)};
    for (auto* pf : framework_->post_filter()) {
      const std::string_view why = pf->WhyNoPlan(ctx);
      if (!why.empty()) {
        // A verdict kept from an earlier pass carries the note already: replace it.
        std::string& reason = verdict.reason;
        if (const size_t at = reason.find("; reclaim for queue '"); at != std::string::npos) reason.erase(at);
        reason.append("; ").append(why);
        break;
      }
    }
  }
  return std::move(verdict);
}

Scheduler::YieldPoint Scheduler::YieldOf(int32_t index, TimeUs now) const {
  const JobRecord& rec = jobs_[index];
  const framework::RunningJob& run = running_jobs_[running_pos_[index]];
  YieldPoint y{options_.preemption_grace, false};
  if (rec.spec.best_effort && options_.yield_best_effort >= 0) {
    y.delay = options_.yield_best_effort;
  } else if (run.checkpoint_interval > 0 && options_.yield_training_grace >= 0) {
    // Its next checkpoint (the run's first one while it is still starting).
    const TimeUs at = std::max(now, run.run_start);
    const TimeUs next = run.LastCheckpoint(at) + run.checkpoint_interval;
    const TimeUs until_next = next - now;
    if (until_next <= options_.yield_training_grace) {
      y.delay = until_next;
      y.keeps_work = true;
    } else {
      y.delay = options_.yield_training_grace;
    }
  }
  return y;
}

Status Scheduler::Evict(int32_t index, JobId preemptor, bool defer_requeue, const YieldPoint* yield) {
  JobRecord& rec = jobs_[index];
  BERTH_RETURN_IF_ERROR(job::CheckTransition(rec.state, JobState::kPreempted));
  const TimeUs now = clock_.Now();
  const framework::RunningJob& run = running_jobs_[running_pos_[index]];
  if (yield != nullptr && yield->keeps_work) {
    // It checkpoints when it yields: the work up to then is saved, none lost.
    // (Its GPUs pass to the preemptor at once, which works only after the
    // delay; the run's held time is counted to now.)
    rec.work_done += std::max<TimeUs>(0, now + yield->delay - run.run_start);
  } else {
    const TimeUs saved_at = run.LastCheckpoint(now);
    rec.work_done += saved_at - run.run_start;
    rec.lost_gpu_seconds += run.LostGpuSeconds(now);
  }
  ++rec.preemptions;
  if (run.run_class != framework::RunClass::kGuaranteed) ++rec.best_effort_evictions;
  rec.preempted_by = preemptor;
  for (auto* a : framework_->admit()) a->OnFinish(rec.spec);
  RunEnded(index, now, /*completed=*/false);
  for (const auto& p : rec.placements) BERTH_RETURN_IF_ERROR(ApplyChecked(state::ReleaseTask{p.task}));
  rec.placements.clear();
  --running_;
  log_.Finished(now, rec.spec.id, "preempted");
  rec.state = JobState::kPending;
  rec.enqueue_time = now;
  rec.startup_delay = options_.restore_cost;  // the next run restores from the checkpoint
  if (rec.spec.elastic() && rec.spec.groups.front().count != rec.requested_tasks) {
    // A job shrunk before its eviction asks for its requested size again.
    rec.spec.groups.front().count = rec.requested_tasks;
    ComputeDemand(index);
  }
  preempted_.push_back(rec.spec.id);
  if (defer_requeue) {
    requeue_after_pass_.push_back(index);
  } else {
    Enqueue(index);
  }
  return Status::Ok();
}

Status Scheduler::Preempt(JobId id) {
  const int32_t* it = index_of_.Find(id);
  if (it == nullptr) return NotFound("no job " + std::to_string(id.value()));
  return Evict(*it, JobId(), /*defer_requeue=*/false);
}

}  // namespace berth::scheduler
