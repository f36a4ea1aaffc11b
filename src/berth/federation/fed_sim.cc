// The federation simulator (fed_sim.h): dispatch, the members and the main loop.
#include "berth/federation/fed_sim_impl.h"

#include <chrono>

namespace berth::federation::sim_detail {

int64_t FedSim::Send(int32_t j, int32_t m, bool promise, int32_t type, TimeUs t, int32_t span, int32_t part) {
  const job::JobSpec& spec = span >= 0 ? spans_[span].specs[part] : SpecOf(j);
  JobState2& js = jobs_[j];
  const int64_t a = static_cast<int64_t>(attempts_.size());
  Attempt at;
  at.job = j;
  at.member = m;
  at.span = span;
  at.part = part;
  at.promise = promise;
  at.gpus = GpusOf(spec);
  at.work = spec.duration;
  at.base = js.done;
  at.restore = js.interruptions > 0 ? opts_.restore_cost : 0;
  TimeUs arrive = t + Owd(m);
  if (policy_ != Policy::kMultiKueue) {
    // Double promise: the digest showed the GPUs free, but jobs sent since and not yet seen hold them.
    const Digest& v = views_[m];
    const int64_t seen_free = v.version == 0 ? fed_.members[m].cluster->total_gpus() : v.free_gpus;
    int64_t inflight = 0;
    for (const auto& f : in_flight_[m]) inflight += f.gpus;
    const bool global = policy_ == Policy::kGlobal || policy_ == Policy::kGlobalCost;
    if ((!global || promise) && at.gpus > 0 && seen_free >= at.gpus && seen_free - inflight < at.gpus)
      ++r_.double_promises;
    // Data: staged before the job reaches the member, or streamed during its run.
    const DataMove d = PlanData(Context(t), jobs_[j].dataset, m);
    if (d.from_region >= 0) {
      r_.cross_region_bytes += static_cast<double>(d.mib) * 1024.0 * 1024.0;
      r_.egress_cost += d.egress_usd;
      if (d.streamed) {
        at.stream = d.transfer;
      } else {
        link_busy_[d.from_region][fed_.members[m].region] = d.ready;
        arrive = std::max(arrive, d.ready);
      }
    }
    // A resumed job's checkpoint moves too (after the data when they share the link); a
    // part takes its tasks' share and leaves the checkpoint where it was written.
    Checkpoint ckpt = js.ckpt;
    if (span >= 0) ckpt.mib = js.ckpt.mib * spec.groups.front().count / SpecOf(j).groups.front().count;
    const DataMove c = PlanCheckpoint(Context(t), ckpt, m);
    if (c.from_region >= 0) {
      CountCheckpointMove(c);
      link_busy_[c.from_region][fed_.members[m].region] = c.ready;
      arrive = std::max(arrive, c.ready);
      if (span < 0) js.ckpt.region = fed_.members[m].region;
    }
  }
  if (promise) ++r_.promises;
  if (promise && Silent(m)) ++r_.promises_to_silent;
  // Estimate-driven rules send the job for the card they estimated: the types at least as fast (global,
  // fastest), or exactly that type (the cost rules).
  if (type >= 0) {
    if (policy_ == Policy::kGlobal || policy_ == Policy::kFastest) at.types = TypesAsFast(m, type);
    if (policy_ == Policy::kGlobalCost || policy_ == Policy::kCheapest)
      at.types = fed_.members[m].cluster->gpu_types()[type].name;
  }
  if (policy_ != Policy::kMultiKueue)
    in_flight_[m].push_back(SentEntry(spec, a, promise, type, arrive, fed_.lease_ttl));
  attempts_.push_back(at);
  if (span < 0) jobs_[j].copies.push_back(a);
  Push(arrive, Kind::kDeliver, j, m, a);
  return a;
}

void FedSim::Dispatch(std::vector<int32_t> batch, TimeUs t) {
  if (batch.empty()) return;
  if (policy_ == Policy::kMultiKueue) {
    for (int32_t j : batch) {
      const std::vector<int32_t> allowed = dispatcher_.Allowed(Context(t), RequestOf(j));
      if (allowed.empty()) {
        if (WaitsForMember(j, t)) {
          parked_.push_back(j);
        } else {
          jobs_[j].lost = true;
        }
        continue;
      }
      for (int32_t m : allowed) Send(j, m, false, -1, t);
    }
    return;
  }
  std::vector<Request> reqs;
  for (int32_t j : batch) reqs.push_back(RequestOf(j));
  if (DispatchBatch(dispatcher_, [&] { return Context(t); }, reqs, opts_.batch_min, [&](size_t i, const Choice& c) {
        if (TrySpan(batch[i], c, t)) return;
        if (c.member < 0) {
          if (WaitsForMember(batch[i], t)) {
            parked_.push_back(batch[i]);
          } else {
            jobs_[batch[i]].lost = true;
          }
          return;
        }
        Send(batch[i], c.member, c.promise, c.estimate.type, t);
      }))
    ++r_.batches;
}

void FedSim::Deliver(const Ev& e, TimeUs t) {
  Attempt& at = attempts_[e.attempt];
  if (!at.live) return;  // withdrawn on the way
  MemberSim& ms = members_[e.member];
  if (Silent(e.member)) {  // lost on the way: delivered again if it rejoins before the job moves
    ms.dropped.push_back(e.attempt);
    return;
  }
  job::JobSpec spec = at.span >= 0 ? spans_[at.span].specs[at.part] : SpecOf(e.job);
  spec.id = JobId(e.attempt);
  spec.submit_time = t;
  if (!at.types.empty())
    for (auto& g : spec.groups)
      if (g.gpus > 0 && g.gpu_type_spec.empty()) g.gpu_type_spec = at.types;
  Status s = ms.sched->Submit(std::move(spec));
  if (!s.ok()) {
    // Invalid for this member: refuse as never fitting.
    at.live = false;
    Push(t + Owd(e.member), Kind::kReply, e.job, e.member, e.attempt, false, true);
    return;
  }
  const double dur_s = UsToSeconds(std::max<TimeUs>(0, at.work));
  ms.pending[e.attempt] = PendingWork{at.gpus, static_cast<double>(at.gpus) * dur_s};
  ms.delivered.push_back(e.attempt);
  at.delivered = true;
  ms.touched = ms.dirty = true;
}

void FedSim::EndRun(int64_t a, TimeUs t) {
  Attempt& at = attempts_[a];
  MemberSim& ms = members_[at.member];
  const double held_us = static_cast<double>(t - at.start) * static_cast<double>(at.gpus);
  ms.held_gpu_us += held_us;
  const cluster::Cluster& c = *fed_.members[at.member].cluster;
  const double usd = held_us / 3.6e9 * fed_.members[at.member].Price(c.gpu_types()[std::max(0, at.type)].name);
  ms.gpu_cost += usd;
  r_.gpu_cost += usd;
  if (at.late_mib > 0) {
    const double part = std::min(1.0, static_cast<double>(t - at.start) / static_cast<double>(std::max<TimeUs>(1, at.late_transfer)));
    r_.cross_region_bytes += part * static_cast<double>(at.late_mib) * 1024.0 * 1024.0;
    r_.egress_cost += part * at.late_egress;
  }
  ms.running.erase(a);
}

Status FedSim::AfterSchedule(int32_t m, TimeUs t) {
  MemberSim& ms = members_[m];
  const cluster::Cluster& c = *fed_.members[m].cluster;
  for (JobId id : ms.sched->Schedule()) {
    const int64_t a = id.value();
    Attempt& at = attempts_[a];
    JobState2& js = jobs_[at.job];
    const scheduler::JobRecord* rec = ms.sched->Find(id);
    double sp = 0;
    for (const auto& p : rec->placements) {
      const GpuTypeId type = c.node(p.alloc.node).gpu_type;
      if (!type.valid()) continue;
      const double s = speed_[m][type.value()];
      if (sp == 0 || s < sp) sp = s, at.type = type.value();
    }
    if (sp <= 0) sp = 1;
    if (at.type < 0) at.type = 0;
    at.started = true;
    at.interrupted = false;
    at.start = t;
    if (at.span >= 0) {  // a part: holds its GPUs until the common start (fed_sim_span.cc)
      if (OtherCopyRunning(at.job, a)) ++r_.ran_twice;
      at.speed = sp;
      at.end = -1;
      ms.pending.erase(a);
      ms.running[a] = RunningEnd{t + spans_[at.span].run + 4 * Owd(m), at.gpus};
      if (!ms.cut) Push(t + Owd(m), Kind::kSpanAdmit, at.job, m, a);  // cut off: the admission is lost
      continue;
    }
    TimeUs run = at.work < 0 ? kNever / 4 : SecondsToUs(UsToSeconds(at.work) / sp) + at.restore;
    run = std::max(run, at.stream);
    if (policy_ == Policy::kMultiKueue) {
      // Data moves after the start, GPUs held.
      const DataMove d = PlanData(Context(t), js.dataset, m);
      if (d.from_region >= 0) {
        at.late_mib = d.mib;
        at.late_transfer = d.transfer;
        at.late_egress = d.egress_usd;
        run = d.streamed ? std::max(run, d.transfer) : run + d.transfer;
      }
      // So does a resumed job's checkpoint.
      const DataMove c = PlanCheckpoint(Context(t), js.ckpt, m);
      if (c.from_region >= 0) {
        CountCheckpointMove(c);
        run += c.transfer;
      }
      bool other_running = false;
      for (int64_t k : js.copies)
        if (k != a && attempts_[k].started && attempts_[k].live) other_running = true;
      if (other_running) ++r_.double_promises;
      if (!ms.cut) Push(t + Owd(m), Kind::kReply, at.job, m, a, true);  // cut off: the admission is lost
    } else {
      for (int64_t k : js.copies)
        if (k != a && attempts_[k].started && attempts_[k].live) ++r_.ran_twice;
    }
    if (js.first_start < 0) js.first_start = t;
    ms.pending.erase(a);
    ms.running[a] = RunningEnd{t + run, at.gpus};
    at.end = t + run;
    Push(t + run, Kind::kComplete, at.job, m, a);
  }
  // Promised jobs that did not start, and jobs that can never fit here, are
  // refused (cut off from the dispatcher: they wait, and move when it is marked down).
  for (int64_t a : ms.delivered) {
    if (ms.cut) break;
    Attempt& at = attempts_[a];
    if (at.started || !at.live) continue;
    const scheduler::JobRecord* rec = ms.sched->Find(JobId(a));
    const bool never = rec != nullptr && rec->state == JobState::kFailed;
    if (!never && !at.promise) continue;
    if (!never) BERTH_RETURN_IF_ERROR(ms.sched->Finish(JobId(a), JobState::kCancelled));
    at.live = false;
    ms.pending.erase(a);
    Push(t + Owd(m), Kind::kReply, at.job, m, a, false, never);
  }
  ms.delivered.clear();
  return Status::Ok();
}

void FedSim::TakeDigest(int32_t m, TimeUs t) {
  MemberSim& ms = members_[m];
  std::vector<RunningEnd> ends;
  ends.reserve(ms.running.size());
  for (const auto& [a, e] : ms.running) ends.push_back(e);
  std::vector<PendingWork> pend;
  pend.reserve(ms.pending.size());
  for (const auto& [a, p] : ms.pending) pend.push_back(p);
  ms.sent.push_back(BuildDigest(m, ++ms.version, t, ms.sched->state(), std::move(ends), pend));
  ++r_.digests;
  ms.last_take = t;
  ms.dirty = false;
  ms.digest_scheduled = false;
  Push(t + Owd(m), Kind::kDigestArrive, -1, m, -1);
}

StatusOr<FedResult> FedSim::Run(const framework::Profile& profile, const framework::PluginRegistry& registry) {
  const auto wall_start = std::chrono::steady_clock::now();
  const size_t n = trace_.jobs.size();
  if (n == 0) return InvalidArgument("federation: the trace has no jobs");
  r_.policy = PolicyName(policy_);
  r_.jobs_total = static_cast<int64_t>(n);
  const size_t nm = fed_.members.size();
  members_.resize(nm);
  views_.resize(nm);
  stale_.assign(nm, 0);
  down_.assign(nm, 0);
  suspect_.assign(nm, 0);
  silent_.assign(nm, 0);
  in_flight_.resize(nm);
  const size_t nr = fed_.regions.size();
  link_busy_.assign(nr, std::vector<TimeUs>(nr, 0));
  for (size_t m = 0; m < nm; ++m) {
    const cluster::Cluster& c = *fed_.members[m].cluster;
    framework::PluginContext context;
    context.cluster = &c;
    context.workload = trace_.jobs;
    BERTH_ASSIGN_OR_RETURN(std::unique_ptr<framework::Framework> fw,
                           framework::Framework::Create(profile, registry, context));
    scheduler::SchedulerOptions so;
    so.seed = opts_.seed;
    members_[m].sched = std::make_unique<scheduler::Scheduler>(c, std::move(fw), std::move(so), clock_);
    // A member joins with a digest of its empty cluster (version 1).
    views_[m] = BuildDigest(static_cast<int32_t>(m), 1, 0, members_[m].sched->state(), {}, {});
    members_[m].version = 1;
    capacity_.push_back(views_[m].types);
  }
  jobs_.resize(n);
  TimeUs first = kNever;
  for (size_t i = 0; i < n; ++i) {
    jobs_[i].dataset = JobDataset(fed_, trace_.jobs[i], static_cast<int64_t>(i));
    Push(trace_.jobs[i].submit_time, Kind::kArrive, static_cast<int32_t>(i), -1, -1);
    first = std::min(first, trace_.jobs[i].submit_time);
  }
  for (const MemberFailure& f : fed_.failures)
    for (int32_t m : f.members)  // `attempt`: how long
      Push(first + f.at, f.partition ? Kind::kPartition : Kind::kFail, -1, m, f.duration);
  TimeUs end = first;
  while (!q_.empty()) {
    const TimeUs t = q_.top().t;
    clock_.Set(t);
    std::vector<int32_t> to_dispatch;
    while (!q_.empty() && q_.top().t == t) {
      const Ev e = q_.top();
      q_.pop();
      switch (e.kind) {
        case Kind::kArrive:
          to_dispatch.push_back(e.job);
          break;
        case Kind::kDeliver:
          Deliver(e, t);
          break;
        case Kind::kReply: {
          ReleaseAttempt(in_flight_[e.member], e.attempt);
          if (attempts_[e.attempt].span >= 0) {
            SpanRefused(e, to_dispatch);
            break;
          }
          if (attempts_[e.attempt].moved) break;  // the job has moved on (its member was down)
          JobState2& js = jobs_[e.job];
          if (e.flag) {  // multikueue admission: the first kept, the other copies withdrawn
            if (js.winner >= 0) break;
            js.winner = e.attempt;
            for (int64_t k : js.copies)
              if (k != e.attempt && attempts_[k].live)
                Push(t + Owd(attempts_[k].member), Kind::kCancel, e.job, attempts_[k].member, k);
            break;
          }
          if (policy_ == Policy::kMultiKueue) break;  // the other copies stand
          if (e.never_fits) js.excluded.push_back(e.member);
          if (!e.never_fits) stale_[e.member] = 1;  // no promise there before its next digest
          ++(e.never_fits ? r_.refused_never_fit : r_.refused_promises);
          ++r_.redispatches;
          to_dispatch.push_back(e.job);
          break;
        }
        case Kind::kComplete: {
          Attempt& at = attempts_[e.attempt];
          if (at.span >= 0) {
            BERTH_ASSIGN_OR_RETURN(bool done, SpanPartDone(e.attempt, t));
            if (done) end = std::max(end, t);
            break;
          }
          // Withdrawn, or interrupted by a failure (a withdrawal a cut-off member did not hear: it ends there).
          if ((!at.live && !at.unheard_cancel) || at.end != t) break;
          at.live = false;
          at.unheard_cancel = false;
          MemberSim& ms = members_[e.member];
          if (ms.cut) ++r_.finished_unseen;
          BERTH_RETURN_IF_ERROR(ms.sched->Finish(JobId(e.attempt), JobState::kSucceeded));
          EndRun(e.attempt, t);
          JobState2& js = jobs_[e.job];
          if (js.finish < 0) {
            js.finish = t;
            ++ms.jobs;
          } else if (policy_ != Policy::kMultiKueue) {
            ++r_.ran_twice;
          }
          ms.touched = ms.dirty = true;
          end = std::max(end, t);
          break;
        }
        case Kind::kCancel: {
          Attempt& at = attempts_[e.attempt];
          if (!at.live) break;
          at.live = false;
          MemberSim& ms = members_[e.member];
          if (Silent(e.member)) {  // it cannot hear it: cancelled when it rejoins
            ms.to_cancel.push_back(e.attempt);
            at.unheard_cancel = ms.cut && at.started;  // cut off, it runs on
            break;
          }
          BERTH_RETURN_IF_ERROR(ms.sched->Finish(JobId(e.attempt), JobState::kCancelled));
          if (at.started) EndRun(e.attempt, t);
          ms.pending.erase(e.attempt);
          ms.touched = ms.dirty = true;
          break;
        }
        case Kind::kDigestTake:
          members_[e.member].take_due = true;  // after the member's pass at this instant
          break;
        case Kind::kDigestArrive: {
          MemberSim& ms = members_[e.member];
          views_[e.member] = std::move(ms.sent.front());
          stale_[e.member] = 0;
          ms.sent.pop_front();
          const TimeUs taken = views_[e.member].taken_at;
          r_.leases_expired += ReflectDigest(in_flight_[e.member], taken, t);
          Heard(e.member, taken, to_dispatch);
          // Spanning jobs no split held: tried again on what this digest shows.
          to_dispatch.insert(to_dispatch.end(), span_waiting_.begin(), span_waiting_.end());
          span_waiting_.clear();
          break;
        }
        case Kind::kFail:
          BERTH_RETURN_IF_ERROR(Fail(e.member, t, e.attempt));
          break;
        case Kind::kPartition:
          BERTH_RETURN_IF_ERROR(Partition(e.member, t, e.attempt));
          break;
        case Kind::kSuspect:
          if (Silent(e.member) && members_[e.member].outage == e.attempt) Suspect(e.member, t);
          break;
        case Kind::kFence:
          if (members_[e.member].cut && members_[e.member].outage == e.attempt) members_[e.member].fenced = true;
          break;
        case Kind::kFenceRequeue:
          if (members_[e.member].cut && members_[e.member].outage == e.attempt)
            BERTH_RETURN_IF_ERROR(FenceRequeue(e.member, t));
          break;
        case Kind::kDetect:
        case Kind::kRequeueRunning:
          if (Silent(e.member) && members_[e.member].outage == e.attempt)
            Detect(e.member, t, e.kind == Kind::kRequeueRunning, to_dispatch);
          break;
        case Kind::kRejoin:
          if (Silent(e.member) && members_[e.member].outage == e.attempt)
            BERTH_RETURN_IF_ERROR(Rejoin(e.member, t));
          break;
        case Kind::kSpanAdmit:
          SpanAdmitted(e.attempt, t);
          break;
        case Kind::kSpanGo:
          BERTH_RETURN_IF_ERROR(SpanGo(static_cast<int32_t>(e.attempt), t));
          break;
        case Kind::kSpanTimeout:
          if (spans_[e.attempt].state == SpanSim::State::kSending)
            AbortSpan(static_cast<int32_t>(e.attempt), t, to_dispatch);
          break;
        case Kind::kSpanBroken:  // a part's member told the dispatcher the gang broke, or it marked them down
          ++r_.redispatches;
          if (e.flag) ++r_.requeued_running;
          to_dispatch.push_back(e.job);
          break;
      }
    }
    // Members act on what reached them, then the dispatcher on what reached it.
    for (size_t m = 0; m < nm; ++m) {
      MemberSim& ms = members_[m];
      if (ms.down) continue;  // a failed member does nothing
      if (ms.touched && !ms.fenced) {  // a fenced one starts nothing
        ms.touched = false;
        BERTH_RETURN_IF_ERROR(AfterSchedule(static_cast<int32_t>(m), t));
      }
      if (ms.cut) {  // nothing it publishes reaches the dispatcher; it publishes when it rejoins
        ms.take_due = false;
        continue;
      }
      if (ms.take_due) {
        ms.take_due = false;
        TakeDigest(static_cast<int32_t>(m), t);
      }
      if (ms.dirty && !ms.digest_scheduled) {
        ms.digest_scheduled = true;
        Push(std::max(t, ms.last_take + fed_.digest_interval), Kind::kDigestTake, -1, static_cast<int32_t>(m), -1);
      }
    }
    std::sort(to_dispatch.begin(), to_dispatch.end());
    Dispatch(std::move(to_dispatch), t);
  }

  // Figures.
  std::vector<double> jct, delay;
  for (size_t i = 0; i < n; ++i) {
    const JobState2& js = jobs_[i];
    const job::JobSpec& j = trace_.jobs[i];
    if (j.deadline > 0) {
      ++r_.deadline_jobs;
      if (js.finish < 0 || js.finish > j.submit_time + j.deadline) ++r_.deadline_misses;
    }
    if (js.first_start >= 0) delay.push_back(UsToSeconds(js.first_start - j.submit_time));
    if (js.finish >= 0) {
      ++r_.jobs_finished;
      jct.push_back(UsToSeconds(js.finish - j.submit_time));
    } else if (js.first_start >= 0) {
      ++r_.jobs_unfinished;
    } else {
      ++r_.jobs_lost;
    }
  }
  r_.jct_s = sim::Summarize(std::move(jct));
  r_.queue_delay_s = sim::Summarize(std::move(delay));
  r_.makespan_s = UsToSeconds(end - first);
  const double span = static_cast<double>(std::max<TimeUs>(1, end - first));
  for (size_t m = 0; m < nm; ++m) {
    MemberFigures f;
    f.name = fed_.members[m].name;
    f.region = fed_.regions[fed_.members[m].region];
    f.gpus = fed_.members[m].cluster->total_gpus();
    f.jobs = members_[m].jobs;
    f.utilization = members_[m].held_gpu_us / (static_cast<double>(f.gpus) * span);
    f.gpu_cost = members_[m].gpu_cost;
    r_.members.push_back(std::move(f));
  }
  r_.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return r_;
}

}  // namespace berth::federation::sim_detail

namespace berth::federation {

StatusOr<FedResult> RunFederation(const Federation& fed, const SpeedTable& speed, const sim::Trace& trace,
                                  const framework::Profile& member_profile, const framework::PluginRegistry& registry,
                                  Policy policy, const FedSimOptions& options) {
  if (options.batch_min < 1) return InvalidArgument("federation: batch_min must be positive");
  sim_detail::FedSim s(fed, speed, trace, policy, options);
  return s.Run(member_profile, registry);
}

}  // namespace berth::federation
