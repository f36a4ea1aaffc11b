// The federation simulator's gangs across regions (fed_sim.h, "Gangs across
// regions"; span.h for the plan and the run-time model): parts sent under
// leases, admitted, started together, and released or stopped together.
//
// A span's life: kSending (parts on their way; each member admits its part,
// holding its GPUs, and tells the dispatcher) -> kHolding (every admission
// in: the dispatcher sends the common start, timed to reach the farthest
// part's member) -> kRunning -> kDone. A refusal or a lapsed lease while
// kSending releases every part (AbortSpan); a failure or partition of a
// part's member while kHolding or kRunning stops every part (BreakSpan).
// Either way the span is over and the job is dispatched again exactly once.
#include "berth/federation/fed_sim_impl.h"

namespace berth::federation::sim_detail {

using State = SpanSim::State;

bool FedSim::OtherCopyRunning(int32_t j, int64_t a) const {
  for (int64_t k : jobs_[j].copies)
    if (k != a && attempts_[k].started && attempts_[k].live) return true;
  for (int32_t s : jobs_[j].spans)
    if (s != attempts_[a].span && (spans_[s].state == State::kRunning || spans_[s].state == State::kHolding))
      for (int64_t k : spans_[s].parts)
        if (attempts_[k].started && attempts_[k].live) return true;
  return false;
}

bool FedSim::TrySpan(int32_t j, const Choice& c, TimeUs t) {
  const job::JobSpec& spec = SpecOf(j);
  if (!Splittable(spec) || policy_ == Policy::kMultiKueue) return false;
  // A member holds it whole: only `global` weighs a split against it.
  if (c.member >= 0 && policy_ != Policy::kGlobal) return false;
  const SpanPlan p = PlanSpan(Context(t), RequestOf(j));
  if (p.parts.empty()) {
    if (c.member >= 0 || !p.could_ever) return false;  // whole, or as today (parked or lost)
    span_waiting_.push_back(j);
    return true;
  }
  if (c.member >= 0 && p.finish >= c.estimate.finish) return false;
  SendSpan(j, p, t);
  return true;
}

void FedSim::SendSpan(int32_t j, const SpanPlan& p, TimeUs t) {
  const int32_t s = static_cast<int32_t>(spans_.size());
  const job::JobSpec& spec = SpecOf(j);
  JobState2& js = jobs_[j];
  SpanSim sp;
  sp.job = j;
  sp.run = p.run;
  sp.work = spec.duration;
  sp.base = js.done;
  sp.restore = js.interruptions > 0 ? opts_.restore_cost : 0;
  for (const SpanPart& part : p.parts) {
    sp.specs.push_back(PartSpec(spec, part.tasks));
    sp.regions.push_back(fed_.members[part.member].region);
  }
  spans_.push_back(std::move(sp));
  js.spans.push_back(s);
  TimeUs last = t;
  for (size_t k = 0; k < p.parts.size(); ++k) {
    const int64_t a = Send(j, p.parts[k].member, true, p.parts[k].estimate.type, t, s, static_cast<int32_t>(k));
    spans_[s].parts.push_back(a);
    last = std::max(last, in_flight_[p.parts[k].member].back().arrives);
  }
  // A part not admitted within its lease releases them all.
  Push(last + fed_.lease_ttl, Kind::kSpanTimeout, j, -1, s);
}

void FedSim::SpanAdmitted(int64_t a, TimeUs t) {
  SpanSim& sp = spans_[attempts_[a].span];
  if (sp.state != State::kSending || ++sp.admitted < static_cast<int32_t>(sp.parts.size())) return;
  // Every part admitted: one common start, timed to reach every member.
  sp.state = State::kHolding;
  TimeUs owd = 0;
  for (int64_t k : sp.parts) owd = std::max(owd, Owd(attempts_[k].member));
  Push(t + owd, Kind::kSpanGo, sp.job, -1, attempts_[a].span);
}

void FedSim::SpanRefused(const Ev& e, std::vector<int32_t>& to_dispatch) {
  const int32_t s = attempts_[e.attempt].span;
  JobState2& js = jobs_[e.job];
  if (e.never_fits) {
    js.excluded.push_back(e.member);
  } else {
    stale_[e.member] = 1;  // no promise there before its next digest
  }
  if (spans_[s].state != State::kSending) return;  // released already
  ++(e.never_fits ? r_.refused_never_fit : r_.refused_promises);
  AbortSpan(s, e.t, to_dispatch);
}

void FedSim::AbortSpan(int32_t s, TimeUs t, std::vector<int32_t>& to_dispatch) {
  SpanSim& sp = spans_[s];
  sp.state = State::kAborted;
  for (int64_t a : sp.parts) {
    Attempt& at = attempts_[a];
    ReleaseAttempt(in_flight_[at.member], a);
    if (!at.live) continue;
    if (at.delivered) {
      Push(t + Owd(at.member), Kind::kCancel, sp.job, at.member, a);
    } else {
      at.live = false;  // still on its way (or lost on it): it is dropped when it arrives
    }
  }
  ++r_.redispatches;
  to_dispatch.push_back(sp.job);
}

Status FedSim::SpanGo(int32_t s, TimeUs t) {
  SpanSim& sp = spans_[s];
  if (sp.state != State::kHolding) return Status::Ok();
  double slowest = 0;
  TimeUs stream = 0;
  for (int64_t a : sp.parts) {
    const Attempt& at = attempts_[a];
    const MemberSim& ms = members_[at.member];
    // A part whose GPUs are gone, or whose member the start cannot reach: the gang never starts.
    if (!at.live || !at.started || ms.down || ms.cut) return BreakSpan(s, t);
    slowest = slowest == 0 ? at.speed : std::min(slowest, at.speed);
    stream = std::max(stream, at.stream);
  }
  const TimeUs base = sp.work < 0 ? kNever / 8 : SecondsToUs(UsToSeconds(sp.work) / std::max(1e-9, slowest));
  const TimeUs run = std::max(SpanRunTime(fed_, RingOf(fed_, sp.regions), base, SpecOf(sp.job).work_steps) + sp.restore,
                              stream);
  sp.state = State::kRunning;
  sp.go = t;
  sp.end = t + run;
  JobState2& js = jobs_[sp.job];
  if (js.first_start < 0) js.first_start = t;
  if (std::none_of(js.spans.begin(), js.spans.end(), [&](int32_t k) { return k != s && spans_[k].go >= 0; }))
    ++r_.spanning_jobs;  // the job's first split run
  for (int64_t a : sp.parts) {
    Attempt& at = attempts_[a];
    MemberSim& ms = members_[at.member];
    at.end = sp.end;
    ms.running[a] = RunningEnd{sp.end, at.gpus};
    ms.dirty = true;
    ++r_.spanning_parts;
    r_.span_starts.push_back({sp.job, at.member, t});
    Push(sp.end, Kind::kComplete, sp.job, at.member, a);
  }
  return Status::Ok();
}

void FedSim::CountSpanTraffic(const SpanSim& sp, TimeUs work) {
  for (size_t k = 0; k < sp.parts.size(); ++k) {
    const SpanTraffic tr = PartTraffic(fed_, sp.regions, k, attempts_[sp.parts[k]].gpus, work);
    r_.cross_region_bytes += tr.bytes;
    r_.egress_cost += tr.egress_usd;
  }
}

StatusOr<bool> FedSim::SpanPartDone(int64_t a, TimeUs t) {
  Attempt& at = attempts_[a];
  SpanSim& sp = spans_[at.span];
  if (!at.live || at.end != t || sp.state != State::kRunning) return false;  // stopped meanwhile
  at.live = false;
  MemberSim& ms = members_[at.member];
  BERTH_RETURN_IF_ERROR(ms.sched->Finish(JobId(a), JobState::kSucceeded));
  EndRun(a, t);
  ms.touched = ms.dirty = true;
  if (++sp.completed < static_cast<int32_t>(sp.parts.size())) return false;
  sp.state = State::kDone;
  CountSpanTraffic(sp, std::max<TimeUs>(0, sp.work));
  JobState2& js = jobs_[sp.job];
  if (js.finish >= 0) {
    ++r_.ran_twice;
    return false;
  }
  js.finish = t;
  ++members_[attempts_[sp.parts.front()].member].jobs;  // the largest part's member
  return true;
}

Status FedSim::BreakSpan(int32_t s, TimeUs t) {
  SpanSim& sp = spans_[s];
  if (sp.state != State::kHolding && sp.state != State::kRunning) return Status::Ok();
  const bool ran = sp.state == State::kRunning;
  const int32_t j = sp.job;
  JobState2& js = jobs_[j];
  if (ran) {
    int64_t gpus = 0;
    for (int64_t a : sp.parts) gpus += attempts_[a].gpus;
    if (sp.work >= 0) {  // as for a whole gang; the checkpoint is written in the largest part's region
      const TimeUs did = KeepProgress(j, {sp.go, sp.end, sp.restore, sp.base, sp.work}, t, gpus, sp.regions.front());
      CountSpanTraffic(sp, did);
    }
    ++js.interruptions;
  }
  sp.state = State::kAborted;
  for (int64_t a : sp.parts)
    if (attempts_[a].live) BERTH_RETURN_IF_ERROR(StopSpanPart(a, t));
  // The dispatcher hears of it from the first part's member it can hear, else when it marks them down.
  TimeUs learn = kNever;
  for (int64_t a : sp.parts)
    if (!Silent(attempts_[a].member)) learn = std::min(learn, t + Owd(attempts_[a].member));
  if (learn == kNever) learn = t + fed_.member_timeout;
  Push(learn, Kind::kSpanBroken, j, -1, s, ran);
  return Status::Ok();
}

// One part stops: on a failed member it is back in that member's queue (and
// cancelled when it rejoins, before it schedules); elsewhere it ends there.
Status FedSim::StopSpanPart(int64_t a, TimeUs t) {
  Attempt& at = attempts_[a];
  MemberSim& ms = members_[at.member];
  if (ms.down) {
    if (at.started) {
      BERTH_RETURN_IF_ERROR(ms.sched->Interrupt(JobId(a), 0, false));
      EndRun(a, t);
    }
    if (at.live) {
      at.moved = true;
      ms.to_cancel.push_back(a);
    }
  } else if (at.started || at.delivered) {
    const scheduler::JobRecord* rec = ms.sched->Find(JobId(a));
    if (rec != nullptr && (rec->state == JobState::kPending || rec->state == JobState::kRunning))
      BERTH_RETURN_IF_ERROR(ms.sched->Finish(JobId(a), JobState::kCancelled));
    if (at.started) EndRun(a, t);
    ms.pending.erase(a);
    ms.touched = ms.dirty = true;
  }
  at.live = false;
  at.started = false;
  at.unheard_cancel = false;
  at.end = -1;
  return Status::Ok();
}

Status FedSim::HitSpanPart(int64_t a, TimeUs t) {
  const Attempt& at = attempts_[a];
  if (!at.started) return Status::Ok();
  const State st = spans_[at.span].state;
  if (at.live && (st == State::kHolding || st == State::kRunning)) return BreakSpan(at.span, t);
  return StopSpanPart(a, t);  // its gang is not running: only this part stops
}

}  // namespace berth::federation::sim_detail
