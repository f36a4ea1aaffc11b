// The federation simulator's internals (fed_sim.h): its events, the state of
// each job, attempt and member, and the simulator class, shared by fed_sim.cc
// (dispatch, members, the main loop), fed_sim_failures.cc (outages and
// partitions) and fed_sim_span.cc (gangs split across regions).
#pragma once

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
#include "berth/federation/span.h"
#include "berth/scheduler/scheduler.h"

namespace berth::federation::sim_detail {

using job::JobState;
inline constexpr TimeUs kNever = std::numeric_limits<TimeUs>::max();

// kFail .. kFenceRequeue: a member failure or partition (fed.failures);
// `attempt` carries the member's outage number so that the events of an
// earlier outage are void (kFail, kPartition: how long it lasts).
// kSpanAdmit .. kSpanBroken: a spanning job (fed_sim_span.cc); `attempt` is
// the part (kSpanAdmit) or the span's index (the others).
enum class Kind { kArrive, kDeliver, kReply, kComplete, kDigestTake, kDigestArrive, kCancel, kFail, kDetect,
                  kRequeueRunning, kRejoin, kPartition, kSuspect, kFence, kFenceRequeue, kSpanAdmit, kSpanGo,
                  kSpanTimeout, kSpanBroken };

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
  // Withdrawn (multikueue) while it ran at a member cut off from the
  // dispatcher: the member did not hear it, so the run goes on there.
  bool unheard_cancel = false;
  // MultiKueue: data moved after the start (bytes and egress counted for the
  // part moved when the copy ends).
  MiB late_mib = 0;
  TimeUs late_transfer = 0;
  double late_egress = 0;
  // A part of a spanning job: its span (index in FedSim::spans_) and place
  // in it; whether it reached the member (submitted there); the speed of the
  // card it was placed on. A part holds its GPUs from its admission
  // (`started`, `start`) and runs from the span's common start.
  int32_t span = -1;
  int32_t part = -1;
  bool delivered = false;
  double speed = 1;
};

// A job whose gang runs split across regions (span.h): its parts, one
// attempt each. kSending: parts on their way or not all admitted; kHolding:
// every part admitted (GPUs held), the common start `go` sent; kRunning:
// from `go` to `end`; kDone; kAborted: released (refused, lease lapsed, or a
// failure hit a part) and the job dispatched again.
struct SpanSim {
  enum class State { kSending, kHolding, kRunning, kDone, kAborted };
  int32_t job = -1;
  State state = State::kSending;
  std::vector<int64_t> parts;
  std::vector<job::JobSpec> specs;  // per part: the job its member receives
  std::vector<int32_t> regions;     // per part (ring order)
  int32_t admitted = 0, completed = 0;
  TimeUs run = 0;      // estimated at dispatch (digests' release profile while held)
  TimeUs work = -1;    // job time left to run (trace reference time)
  TimeUs base = 0;     // the job's progress at the start (its last checkpoint)
  TimeUs restore = 0;
  TimeUs go = -1, end = -1;
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
  std::vector<int32_t> spans;  // its spanning attempts (spans_ indices)
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
  // Partitions: cut off from the dispatcher (it runs on, unseen), and fenced
  // once the lease of its last contact has lapsed (it starts nothing).
  bool cut = false;
  bool fenced = false;
  int64_t outage = 0;
  TimeUs rejoined_at = -1;
  std::vector<int64_t> dropped;
  std::vector<int64_t> to_cancel;
};

inline int64_t GpusOf(const job::JobSpec& j) {
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
    c.down = silent_;
    c.now = now;
    return c;
  }
  const job::JobSpec& SpecOf(int32_t j) const { return jobs_[j].resumed ? *jobs_[j].resumed : trace_.jobs[j]; }
  Request RequestOf(int32_t j) const {
    return Request{&SpecOf(j), jobs_[j].dataset, static_cast<int64_t>(j), jobs_[j].excluded, jobs_[j].ckpt};
  }
  // No member may take job `j` now: true when one could once the members marked down are back (it waits).
  bool WaitsForMember(int32_t j, TimeUs t) {
    if (std::find(silent_.begin(), silent_.end(), 1) == silent_.end()) return false;
    EstimateContext c = Context(t);
    c.down = {};
    return !dispatcher_.Allowed(c, RequestOf(j)).empty();
  }
  void Dispatch(std::vector<int32_t> batch, TimeUs t);
  // `span` >= 0: part `part` of that spanning job (its spec, a share of the
  // checkpoint). Returns the attempt.
  int64_t Send(int32_t j, int32_t m, bool promise, int32_t type, TimeUs t, int32_t span = -1, int32_t part = -1);
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
  // Gangs across regions (fed_sim_span.cc). TrySpan: whether job `j` goes
  // split (sent, or held by the dispatcher until a split fits) rather than
  // as `c` decided.
  bool TrySpan(int32_t j, const Choice& c, TimeUs t);
  void SendSpan(int32_t j, const SpanPlan& p, TimeUs t);
  void SpanAdmitted(int64_t a, TimeUs t);
  void SpanRefused(const Ev& e, std::vector<int32_t>& to_dispatch);
  Status SpanGo(int32_t s, TimeUs t);
  // A part finished its run; true when the job did (every part).
  StatusOr<bool> SpanPartDone(int64_t a, TimeUs t);
  // The dispatcher releases every part (refused, lease lapsed) and sends the job again.
  void AbortSpan(int32_t s, TimeUs t, std::vector<int32_t>& to_dispatch);
  // The gang breaks (a failure or partition hit a part, or a part missed the
  // common start): every part stops at once, progress kept to the last
  // checkpoint; the dispatcher sends the job again when it hears of it.
  Status BreakSpan(int32_t s, TimeUs t);
  Status StopSpanPart(int64_t a, TimeUs t);
  // A run of job `j` (whole or split) stopped at `t`: its progress up to the
  // last checkpoint is kept (the checkpoint written in `region` for `gpus`
  // GPUs), the rest counted lost, and js.resumed is what is left of the job.
  // Returns the job time the run did.
  struct RunSpan {
    TimeUs start, end, restore;  // working from start + restore toward end
    TimeUs base, work;           // job time done before it, and to do in it
  };
  TimeUs KeepProgress(int32_t j, const RunSpan& run, TimeUs t, int64_t gpus, int32_t region);
  // A failure or partition of its member hits a part that holds GPUs.
  Status HitSpanPart(int64_t a, TimeUs t);
  // Counts a spanning run's inter-region traffic for `work` of job time.
  void CountSpanTraffic(const SpanSim& sp, TimeUs work);
  bool OtherCopyRunning(int32_t j, int64_t a) const;
  // Partitions: the member is cut off from the dispatcher; after 3/4 of the
  // member timeout its lease has lapsed (fenced: it starts nothing), and
  // requeue_running_after later it requeues the running jobs.
  Status Partition(int32_t m, TimeUs t, TimeUs length);
  Status FenceRequeue(int32_t m, TimeUs t);
  // The dispatcher heard nothing for a digest interval: no promise there and
  // no job sent there until its next digest.
  void Suspect(int32_t m, TimeUs t);
  // A member's digest arrived: what it clears of the dispatcher's silence
  // marks; the jobs parked for a member are sent again when one is back.
  void Heard(int32_t m, TimeUs taken, std::vector<int32_t>& to_dispatch);
  bool Silent(int32_t m) const { return members_[m].down || members_[m].cut; }

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
  std::vector<char> suspect_;  // per member: silent past a digest interval, not yet heard again
  std::vector<char> silent_;   // down_ or suspect_: no job is sent there
  std::vector<int32_t> parked_;  // jobs only members marked down may run: sent when one is back
  std::vector<SpanSim> spans_;
  std::vector<int32_t> span_waiting_;  // spanning jobs no split fits now: tried again at the next digest
  FedResult r_;
};


}  // namespace berth::federation::sim_detail
