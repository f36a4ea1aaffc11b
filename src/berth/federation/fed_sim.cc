// The federation simulator (fed_sim.h).
#include "berth/federation/fed_sim.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <queue>

#include "berth/common/clock.h"
#include "berth/federation/ledger.h"
#include "berth/scheduler/scheduler.h"

namespace berth::federation {
namespace {

using job::JobState;
constexpr TimeUs kNever = std::numeric_limits<TimeUs>::max();

// kFail .. kRejoin: a member failure (fed.failures); `attempt` carries the
// member's outage number so that the events of an earlier outage are void.
enum class Kind { kArrive, kDeliver, kReply, kComplete, kDigestTake, kDigestArrive, kCancel, kFail, kDetect,
                  kRequeueRunning, kRejoin };

struct Ev {
  TimeUs t = 0;
  int64_t seq = 0;
  Kind kind = Kind::kArrive;
  int32_t job = -1;
  int32_t member = -1;
  int64_t attempt = -1;
  bool flag = false;  // kReply: admitted (else refused); refused as never fitting when `never_fits`
  bool never_fits = false;
  bool operator>(const Ev& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

struct Attempt {
  int32_t job = -1;
  int32_t member = -1;
  bool promise = false;
  bool live = true;      // false once withdrawn, refused or finished
  bool started = false;
  TimeUs start = 0;
  int32_t type = -1;
  int64_t gpus = 0;
  TimeUs stream = 0;     // streamed read time (the run lasts at least this long)
  std::string types;     // global policies: the card types the job is sent for ("" = any)
  TimeUs work = -1;      // the job time this attempt has left to run (trace reference time; -1 unknown)
  TimeUs base = 0;       // the job's progress when it starts (its last checkpoint)
  TimeUs restore = 0;    // added to the run: restoring the checkpoint after a failure
  TimeUs end = -1;       // the run's end, while it runs
  bool interrupted = false;  // was running when its member failed; queued there again
  bool moved = false;        // the dispatcher moved the job away (member down); cancelled when it rejoins
  // MultiKueue: data moved after the start (bytes and egress counted for the
  // part moved when the copy ends).
  MiB late_mib = 0;
  TimeUs late_transfer = 0;
  double late_egress = 0;
};

struct JobState2 {
  int32_t dataset = -1;
  std::vector<int32_t> excluded;
  int64_t winner = -1;   // multikueue: the copy the dispatcher kept
  std::vector<int64_t> copies;
  TimeUs first_start = -1;
  TimeUs finish = -1;
  bool lost = false;
  // Member failures: progress saved at its last checkpoint, where that
  // checkpoint is, and the job as it resumes (duration = what is left).
  TimeUs done = 0;
  int32_t interruptions = 0;
  Checkpoint ckpt;
  std::optional<job::JobSpec> resumed;
};

struct MemberSim {
  std::unique_ptr<scheduler::Scheduler> sched;
  bool touched = false;
  bool dirty = false;
  bool digest_scheduled = false;
  bool take_due = false;
  TimeUs last_take = std::numeric_limits<TimeUs>::min() / 2;
  int64_t version = 0;
  std::deque<Digest> sent;  // digests on their way to the dispatcher
  std::map<int64_t, PendingWork> pending;  // by attempt
  std::map<int64_t, RunningEnd> running;   // by attempt
  std::vector<int64_t> delivered;          // this instant
  double held_gpu_us = 0;
  double gpu_cost = 0;
  int64_t jobs = 0;
  // Failures: down from the failure until it has rejoined (the dispatcher's
  // cancellations reached it); jobs delivered meanwhile; copies moved away.
  bool down = false;
  int64_t outage = 0;
  TimeUs rejoined_at = -1;
  std::vector<int64_t> dropped;
  std::vector<int64_t> to_cancel;
};

int64_t GpusOf(const job::JobSpec& j) {
  int64_t n = 0;
  for (const auto& g : j.groups) n += int64_t{g.gang_min()} * std::max(g.gpus, g.is_sharing() ? 1 : 0);
  return n;
}

class FedSim {
 public:
  FedSim(const Federation& fed, const SpeedTable& speed, const sim::Trace& trace, Policy policy,
         const FedSimOptions& o)
      : fed_(fed), speed_(speed), trace_(trace), dispatcher_(policy, fed), policy_(policy), opts_(o) {}

  StatusOr<FedResult> Run(const framework::Profile& profile, const framework::PluginRegistry& registry);

 private:
  // A checkpoint moved between regions: its bytes and egress in the figures.
  void CountCheckpointMove(const DataMove& c) {
    const double bytes = static_cast<double>(c.mib) * 1024.0 * 1024.0;
    r_.cross_region_bytes += bytes;
    r_.checkpoint_bytes += bytes;
    r_.egress_cost += c.egress_usd;
  }
  void Push(TimeUs t, Kind k, int32_t job, int32_t member, int64_t attempt, bool flag = false, bool nf = false) {
    q_.push(Ev{t, seq_++, k, job, member, attempt, flag, nf});
  }
  TimeUs Owd(int32_t m) const { return fed_.link(fed_.dispatcher_region, fed_.members[m].region).rtt / 2; }
  EstimateContext Context(TimeUs now) const {
    EstimateContext c;
    c.fed = &fed_;
    c.speed = &speed_;
    c.views = views_;
    c.stale = stale_;
    c.in_flight = in_flight_;
    c.link_busy = &link_busy_;
    c.capacity = &capacity_;
    c.down = down_;
    c.now = now;
    return c;
  }
  const job::JobSpec& SpecOf(int32_t j) const { return jobs_[j].resumed ? *jobs_[j].resumed : trace_.jobs[j]; }
  Request RequestOf(int32_t j) const {
    return Request{&SpecOf(j), jobs_[j].dataset, static_cast<int64_t>(j), jobs_[j].excluded, jobs_[j].ckpt};
  }
  // No member may take job `j` now: true when one could once the members marked down are back (it waits).
  bool WaitsForMember(int32_t j, TimeUs t) {
    if (std::find(down_.begin(), down_.end(), 1) == down_.end()) return false;
    EstimateContext c = Context(t);
    c.down = {};
    return !dispatcher_.Allowed(c, RequestOf(j)).empty();
  }
  void Dispatch(std::vector<int32_t> batch, TimeUs t);
  void Send(int32_t j, int32_t m, bool promise, int32_t type, TimeUs t);
  void Deliver(const Ev& e, TimeUs t);
  // The member's card types at least as fast as `type`, '|'-separated.
  std::string TypesAsFast(int32_t m, int32_t type) const {
    std::string out;
    const auto& types = fed_.members[m].cluster->gpu_types();
    for (size_t k = 0; k < types.size(); ++k)
      if (speed_[m][k] >= speed_[m][type]) out += (out.empty() ? "" : "|") + types[k].name;
    return out;
  }
  Status AfterSchedule(int32_t m, TimeUs t);
  void EndRun(int64_t a, TimeUs t);
  void TakeDigest(int32_t m, TimeUs t);
  // Member failures (fed_.failures).
  Status Fail(int32_t m, TimeUs t, TimeUs length);
  Status Interrupt(int64_t a, TimeUs t);
  void Detect(int32_t m, TimeUs t, bool running, std::vector<int32_t>& to_dispatch);
  void MoveAway(int64_t a, bool running, std::vector<int32_t>& to_dispatch);
  Status Rejoin(int32_t m, TimeUs t);

  const Federation& fed_;
  const SpeedTable& speed_;
  const sim::Trace& trace_;
  Dispatcher dispatcher_;
  Policy policy_;
  FedSimOptions opts_;
  ManualClock clock_{0};
  std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> q_;
  int64_t seq_ = 0;
  std::vector<MemberSim> members_;
  std::vector<Attempt> attempts_;
  std::vector<JobState2> jobs_;
  std::vector<Digest> views_;
  std::vector<char> stale_;  // per member: refused a promise since its last digest
  std::vector<std::vector<InFlight>> in_flight_;
  std::vector<std::vector<TimeUs>> link_busy_;
  std::vector<std::vector<TypeDigest>> capacity_;
  std::vector<char> down_;     // per member: marked down by the dispatcher
  std::vector<int32_t> parked_;  // jobs only members marked down may run: sent when one is back
  FedResult r_;
};

void FedSim::Send(int32_t j, int32_t m, bool promise, int32_t type, TimeUs t) {
  const job::JobSpec& spec = SpecOf(j);
  JobState2& js = jobs_[j];
  const int64_t a = static_cast<int64_t>(attempts_.size());
  Attempt at;
  at.job = j;
  at.member = m;
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
    // A resumed job's checkpoint moves too (after the data when they share the link).
    const DataMove c = PlanCheckpoint(Context(t), js.ckpt, m);
    if (c.from_region >= 0) {
      CountCheckpointMove(c);
      link_busy_[c.from_region][fed_.members[m].region] = c.ready;
      arrive = std::max(arrive, c.ready);
      js.ckpt.region = fed_.members[m].region;
    }
  }
  if (promise) ++r_.promises;
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
  jobs_[j].copies.push_back(a);
  Push(arrive, Kind::kDeliver, j, m, a);
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
  if (ms.down) {  // lost on the way: delivered again if it rejoins before the job moves
    ms.dropped.push_back(e.attempt);
    return;
  }
  job::JobSpec spec = SpecOf(e.job);
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
      Push(t + Owd(m), Kind::kReply, at.job, m, a, true);
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
  // Promised jobs that did not start, and jobs that can never fit here, are refused.
  for (int64_t a : ms.delivered) {
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
  for (int64_t a : running) BERTH_RETURN_IF_ERROR(Interrupt(a, t));
  // The dispatcher hears nothing from it for the member timeout; it rejoins
  // when it is back and the dispatcher's cancellations of what moved reached it.
  Push(t + fed_.member_timeout, Kind::kDetect, -1, m, ms.outage);
  if (length >= 0) Push(t + length + 2 * Owd(m), Kind::kRejoin, -1, m, ms.outage);
  return Status::Ok();
}

Status FedSim::Interrupt(int64_t a, TimeUs t) {
  Attempt& at = attempts_[a];
  JobState2& js = jobs_[at.job];
  MemberSim& ms = members_[at.member];
  BERTH_RETURN_IF_ERROR(ms.sched->Interrupt(JobId(a), 0, false));
  EndRun(a, t);
  if (at.work >= 0) {
    // Progress: the share of the run's working time elapsed, in job time; kept up to the last checkpoint.
    const TimeUs working = std::max<TimeUs>(1, at.end - at.start - at.restore);
    const TimeUs elapsed = std::clamp<TimeUs>(t - at.start - at.restore, 0, working);
    const TimeUs total = at.base + static_cast<TimeUs>(static_cast<double>(at.work) *
                                                       (static_cast<double>(elapsed) / static_cast<double>(working)));
    const TimeUs every = SpecOf(at.job).checkpoint_interval;
    const TimeUs saved = every > 0 ? std::max(at.base, total / every * every) : 0;
    r_.lost_work_gpu_s += UsToSeconds(total - saved) * static_cast<double>(at.gpus);
    if (saved > js.done) {
      js.done = saved;
      js.ckpt.region = fed_.members[at.member].region;
      js.ckpt.mib = static_cast<MiB>(std::llround(fed_.checkpoint_gib_per_gpu * 1024.0 * static_cast<double>(at.gpus)));
    }
    const TimeUs duration = trace_.jobs[at.job].duration;
    js.resumed = trace_.jobs[at.job];
    js.resumed->duration = std::max<TimeUs>(0, duration - js.done);
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
  if (!running) {
    down_[m] = 1;
    ++r_.members_marked_down;
    Push(t + fed_.requeue_running_after, Kind::kRequeueRunning, -1, m, members_[m].outage);
  }
  for (int64_t a = 0; a < static_cast<int64_t>(attempts_.size()); ++a) {
    const Attempt& at = attempts_[a];
    if (at.member == m && at.live && at.interrupted == running) MoveAway(a, running, to_dispatch);
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
    }
    ms.pending.erase(a);
  }
  ms.to_cancel.clear();
  ms.down = false;
  ms.rejoined_at = t;
  std::vector<int64_t> dropped;
  dropped.swap(ms.dropped);
  for (int64_t a : dropped)
    if (attempts_[a].live) Deliver(Ev{t, 0, Kind::kDeliver, attempts_[a].job, m, a}, t);
  ms.touched = ms.dirty = true;
  ms.take_due = true;
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
    for (int32_t m : f.members) Push(first + f.at, Kind::kFail, -1, m, f.duration);  // `attempt`: how long
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
          if (!at.live || at.end != t) break;  // withdrawn, or interrupted by a failure
          at.live = false;
          MemberSim& ms = members_[e.member];
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
          if (ms.down) {  // it cannot hear it: cancelled when it rejoins
            ms.to_cancel.push_back(e.attempt);
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
          ReflectDigest(in_flight_[e.member], taken, t);
          if (down_[e.member] && !ms.down && taken >= ms.rejoined_at) {
            // Back: the jobs waiting for a member are dispatched again.
            down_[e.member] = 0;
            to_dispatch.insert(to_dispatch.end(), parked_.begin(), parked_.end());
            parked_.clear();
          }
          break;
        }
        case Kind::kFail:
          BERTH_RETURN_IF_ERROR(Fail(e.member, t, e.attempt));
          break;
        case Kind::kDetect:
        case Kind::kRequeueRunning:
          if (members_[e.member].down && members_[e.member].outage == e.attempt)
            Detect(e.member, t, e.kind == Kind::kRequeueRunning, to_dispatch);
          break;
        case Kind::kRejoin:
          if (members_[e.member].down && members_[e.member].outage == e.attempt)
            BERTH_RETURN_IF_ERROR(Rejoin(e.member, t));
          break;
      }
    }
    // Members act on what reached them, then the dispatcher on what reached it.
    for (size_t m = 0; m < nm; ++m) {
      MemberSim& ms = members_[m];
      if (ms.down) continue;  // a failed member does nothing
      if (ms.touched) {
        ms.touched = false;
        BERTH_RETURN_IF_ERROR(AfterSchedule(static_cast<int32_t>(m), t));
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

}  // namespace

StatusOr<FedResult> RunFederation(const Federation& fed, const SpeedTable& speed, const sim::Trace& trace,
                                  const framework::Profile& member_profile, const framework::PluginRegistry& registry,
                                  Policy policy, const FedSimOptions& options) {
  if (options.batch_min < 1) return InvalidArgument("federation: batch_min must be positive");
  FedSim s(fed, speed, trace, policy, options);
  return s.Run(member_profile, registry);
}

}  // namespace berth::federation
