// The federation simulator's member outages and partitions (fed_sim.h,
// "Member failures"; docs/federation.md).
#include "berth/federation/fed_sim_impl.h"

namespace berth::federation::sim_detail {

// A member fails: its running jobs stop (the work since their last checkpoint
// is lost) and are queued there again; it schedules nothing, publishes no
// digest and loses what reaches it until it rejoins. `length` -1: for good.
Status FedSim::Fail(int32_t m, TimeUs t, TimeUs length) {
  MemberSim& ms = members_[m];
  ms.down = true;
  ++ms.outage;
  ++r_.member_failures;
  std::vector<int64_t> running;
  for (const auto& [a, e] : ms.running) running.push_back(a);
  for (int64_t a : running) BERTH_RETURN_IF_ERROR(attempts_[a].span >= 0 ? HitSpanPart(a, t) : Interrupt(a, t));
  // The dispatcher hears nothing from it for the member timeout; it rejoins
  // when it is back and the dispatcher's cancellations of what moved reached it.
  Push(t + fed_.digest_interval + Owd(m), Kind::kSuspect, -1, m, ms.outage);
  Push(t + fed_.member_timeout, Kind::kDetect, -1, m, ms.outage);
  if (length >= 0) Push(t + length + 2 * Owd(m), Kind::kRejoin, -1, m, ms.outage);
  return Status::Ok();
}

TimeUs FedSim::KeepProgress(int32_t j, const RunSpan& run, TimeUs t, int64_t gpus, int32_t region) {
  JobState2& js = jobs_[j];
  // Progress: the share of the run's working time elapsed, in job time; kept up to the last checkpoint.
  const TimeUs working = std::max<TimeUs>(1, run.end - run.start - run.restore);
  const TimeUs elapsed = std::clamp<TimeUs>(t - run.start - run.restore, 0, working);
  const TimeUs did =
      static_cast<TimeUs>(static_cast<double>(run.work) * (static_cast<double>(elapsed) / static_cast<double>(working)));
  const TimeUs total = run.base + did;
  const TimeUs every = SpecOf(j).checkpoint_interval;
  const TimeUs saved = every > 0 ? std::max(run.base, total / every * every) : 0;
  r_.lost_work_gpu_s += UsToSeconds(total - saved) * static_cast<double>(gpus);
  if (saved > js.done) {
    js.done = saved;
    js.ckpt.region = region;
    js.ckpt.mib = static_cast<MiB>(std::llround(fed_.checkpoint_gib_per_gpu * 1024.0 * static_cast<double>(gpus)));
  }
  const job::JobSpec& trace = trace_.jobs[j];
  js.resumed = trace;
  js.resumed->duration = std::max<TimeUs>(0, trace.duration - js.done);
  if (trace.work_steps > 0 && trace.duration > 0)  // the steps left, for a spanning run's RTT per step
    js.resumed->work_steps = static_cast<int64_t>(static_cast<double>(trace.work_steps) *
                                                  static_cast<double>(js.resumed->duration) /
                                                  static_cast<double>(trace.duration));
  return did;
}

Status FedSim::Interrupt(int64_t a, TimeUs t) {
  Attempt& at = attempts_[a];
  JobState2& js = jobs_[at.job];
  MemberSim& ms = members_[at.member];
  BERTH_RETURN_IF_ERROR(ms.sched->Interrupt(JobId(a), 0, false));
  EndRun(a, t);
  if (!at.live) {  // a withdrawn copy the member did not hear of: queued there, cancelled when it rejoins
    at.started = false;
    at.unheard_cancel = false;
    at.end = -1;
    return Status::Ok();
  }
  if (at.work >= 0) {
    KeepProgress(at.job, {at.start, at.end, at.restore, at.base, at.work}, t, at.gpus, fed_.members[at.member].region);
    at.base = js.done;
    at.work = js.resumed->duration;
  }
  ++js.interruptions;
  at.started = false;
  at.interrupted = true;
  at.end = -1;
  at.restore = opts_.restore_cost;
  ms.pending[a] = PendingWork{at.gpus, static_cast<double>(at.gpus) * UsToSeconds(std::max<TimeUs>(0, at.work))};
  return Status::Ok();
}

// The dispatcher marks member `m` down (its queued jobs move at once), and
// `requeue_running_after` later moves the jobs that were running there.
void FedSim::Detect(int32_t m, TimeUs t, bool running, std::vector<int32_t>& to_dispatch) {
  r_.leases_expired += ExpireLeases(in_flight_[m], t);
  if (!running) {
    down_[m] = 1;
    silent_[m] = 1;
    ++r_.members_marked_down;
    Push(t + fed_.requeue_running_after, Kind::kRequeueRunning, -1, m, members_[m].outage);
  }
  for (int64_t a = 0; a < static_cast<int64_t>(attempts_.size()); ++a) {
    const Attempt& at = attempts_[a];
    if (at.span >= 0) continue;  // parts: released by their span (fed_sim_span.cc)
    // Queued (or on the way): never started; running: stopped by the failure or the fence.
    const bool match = running ? at.interrupted : !at.started && !at.interrupted;
    if (at.member == m && at.live && match) MoveAway(a, running, to_dispatch);
  }
}

void FedSim::MoveAway(int64_t a, bool running, std::vector<int32_t>& to_dispatch) {
  Attempt& at = attempts_[a];
  at.live = false;
  at.moved = true;
  ReleaseAttempt(in_flight_[at.member], a);
  members_[at.member].to_cancel.push_back(a);
  JobState2& js = jobs_[at.job];
  if (js.finish >= 0) return;
  for (int64_t k : js.copies)
    if (attempts_[k].live) return;  // multikueue: another copy still races
  js.winner = -1;
  ++r_.redispatches;
  ++(running ? r_.requeued_running : r_.requeued_queued);
  to_dispatch.push_back(at.job);
}

// Back: the copies that moved away are cancelled before it schedules again
// (nothing runs twice), what reached it while down is delivered again if the
// job is still its, and it publishes a digest.
Status FedSim::Rejoin(int32_t m, TimeUs t) {
  MemberSim& ms = members_[m];
  for (int64_t a : ms.to_cancel) {
    const scheduler::JobRecord* rec = ms.sched->Find(JobId(a));
    if (rec != nullptr && (rec->state == JobState::kPending || rec->state == JobState::kRunning)) {
      BERTH_RETURN_IF_ERROR(ms.sched->Finish(JobId(a), JobState::kCancelled));
      ++r_.stale_copies_cancelled;
      if (attempts_[a].span >= 0 && attempts_[a].started) {  // a part held for a released gang
        EndRun(a, t);
        attempts_[a].started = false;
      }
    }
    ms.pending.erase(a);
  }
  ms.to_cancel.clear();
  ms.down = false;
  ms.cut = false;
  ms.fenced = false;
  ms.rejoined_at = t;
  std::vector<int64_t> dropped;
  dropped.swap(ms.dropped);
  for (int64_t a : dropped)
    if (attempts_[a].live) Deliver(Ev{t, 0, Kind::kDeliver, attempts_[a].job, m, a}, t);
  ms.touched = ms.dirty = true;
  ms.take_due = true;
  return Status::Ok();
}

// A partition: the member runs on, cut off from the dispatcher (fed_sim.h).
Status FedSim::Partition(int32_t m, TimeUs t, TimeUs length) {
  MemberSim& ms = members_[m];
  ms.cut = true;
  ++ms.outage;
  ++r_.partitions;
  const TimeUs lapse = fed_.member_timeout * 3 / 4;  // its lease from the last contact ends
  Push(t + fed_.digest_interval + Owd(m), Kind::kSuspect, -1, m, ms.outage);
  Push(t + lapse, Kind::kFence, -1, m, ms.outage);
  Push(t + lapse + fed_.requeue_running_after, Kind::kFenceRequeue, -1, m, ms.outage);
  Push(t + fed_.member_timeout, Kind::kDetect, -1, m, ms.outage);
  if (length >= 0) Push(t + length + 2 * Owd(m), Kind::kRejoin, -1, m, ms.outage);
  // A spanning gang with a part here breaks: its traffic crosses the cut.
  std::vector<int64_t> parts;
  for (const auto& [a, e] : ms.running)
    if (attempts_[a].span >= 0) parts.push_back(a);
  for (int64_t a : parts) BERTH_RETURN_IF_ERROR(HitSpanPart(a, t));
  return Status::Ok();
}

// Fenced for requeue_running_after: the jobs still running stop at their last
// checkpoint and queue there again (it starts nothing while fenced).
Status FedSim::FenceRequeue(int32_t m, TimeUs t) {
  MemberSim& ms = members_[m];
  std::vector<int64_t> running;
  for (const auto& [a, e] : ms.running) running.push_back(a);
  for (int64_t a : running) {
    if (attempts_[a].span >= 0) {  // a part held for a gang released meanwhile: it stops
      BERTH_RETURN_IF_ERROR(HitSpanPart(a, t));
      continue;
    }
    if (attempts_[a].live) ++r_.fenced_requeues;
    BERTH_RETURN_IF_ERROR(Interrupt(a, t));
  }
  ms.touched = true;
  return Status::Ok();
}

void FedSim::Suspect(int32_t m, TimeUs t) {
  suspect_[m] = 1;
  silent_[m] = 1;
  stale_[m] = 1;
  r_.leases_expired += ExpireLeases(in_flight_[m], t);
}

void FedSim::Heard(int32_t m, TimeUs taken, std::vector<int32_t>& to_dispatch) {
  const bool was_silent = silent_[m] != 0;
  if (!Silent(m) && taken >= members_[m].rejoined_at) down_[m] = suspect_[m] = 0;
  silent_[m] = down_[m] || suspect_[m];
  if (was_silent && !silent_[m]) {  // back: the jobs waiting for a member are dispatched again
    to_dispatch.insert(to_dispatch.end(), parked_.begin(), parked_.end());
    parked_.clear();
  }
}

}  // namespace berth::federation::sim_detail
