// The live federation dispatcher (`berth serve --federation FILE`): a
// global layer over member `berth serve` processes, one per member cluster
// of the federation file. It decides with the simulator's code
// (federation::DispatchBatch, Dispatcher, EstimateOn and the in-flight
// ledger of ledger.h) on digests it polls from the members (GET /v1/digest),
// forwards each job to the member chosen (POST /v1/jobs with the idempotency
// key "fed-<id>-<attempt>", so a retry never makes two jobs), and follows it
// there (GET /v1/jobs/{member id}).
//
// Leases: a job sent against free capacity (a promise) holds its GPUs in the
// ledger until the member admits it (the job runs there), refuses it (422:
// it is re-dispatched elsewhere), a digest taken after it arrived shows it,
// or the lease (the federation file's lease_s) expires; after an admission
// the GPUs stay in the ledger (no longer a lease) until a digest shows them.
// Jobs sent to queue hold their GPUs in the ledger until a digest shows them.
//
// Failures: a member no call reached for member_timeout is down; its jobs
// waiting there are re-dispatched at once, its running jobs once it has been
// down for requeue_running_after (from their last checkpoint: the job's
// duration less the checkpointed part of the run time observed). When it
// answers again, every copy the dispatcher moved away from it is cancelled
// there. A running job requeued with a checkpoint carries it as data
// (checkpoint_gib_per_gpu x its GPUs, in the region it ran in): the
// estimator counts its move to every candidate, and the job is forwarded
// once the move over the links (FIFO, as the simulator's) would be done.
// Gangs across regions (dispatcher_span.cc): a span_regions job no member
// holds whole now, or whose split finishes sooner (the `global` policy
// weighs both), is split by the simulator's planner (federation::PlanSpan)
// into parts on members of different regions. The dispatcher takes a lease
// (a ledger hold, durable in a kJobAssigned record with every part) on each
// part's member; only while every member is responsive and holds the
// dispatcher's fence lease are the parts submitted, each as the member job
// "<name>.part-<k>" under the key "fed-<id>-<attempt>-part-<k>" with its
// ranks (JobSpec::span_part). The job runs when every part runs and succeeds
// when every part has. A refused part, or parts not all running within
// lease_s, release every part (cancelled where sent) and re-dispatch the job;
// a part that fails or whose member goes down stops the gang (the others are
// cancelled) and re-dispatches it from its checkpoint (ADR 0039, ADR 0040).
//
// Hung members: each member's digest poll runs beside the loop (the loop
// takes its answer on a later turn), and the loop's own calls go only to
// responsive members, so a member that accepts connections and never
// answers holds nobody else's jobs. Fencing: each poll to a member that is
// up and has no copies left to cancel grants it a lease (?lease_until=) of
// at most 3/4 member_timeout past its last answer; a member whose lease has
// lapsed starts nothing and, requeue_running_after later, requeues the jobs
// it was sent (server/service_fence.cc). So every lease has lapsed when the
// member is marked down, and it gets none again before its stale copies are
// cancelled: a member that hung and resumes runs nothing that moved.
//
// Durability: every accepted job (kJobAccepted), every assignment to a
// member (kJobAssigned: written before the job is forwarded, again with the
// member's job id once it answered) and every end (kJobFinished) is in the
// store; a restart folds them back: jobs not yet sent are dispatched, jobs
// being sent are sent again with the same key (the member answers with the
// job it already has), jobs at a member are followed there.
//
// Threads: HTTP handlers take the table lock briefly (submissions wait for
// their record to be durable outside it); one loop thread does the calls to
// the members, never holding the lock during a call, except the digest polls
// (one task per member in flight, std::async) and the forwards of a turn,
// which go out over a few connections per member at once.
//
// Standby (dispatcher_role.cc): over a replicated store (etcd) Start()
// blocks in Acquire() while another dispatcher leads; meanwhile the API
// answers 503 naming the leader (NotReady). A lost term (the store's
// on_lost, or a write refused) is StepDown(): the loop stops at once, before
// any further forward, cancel or write, and the API answers 503 again. Every
// forward follows a durable assignment, so the next leader sends the same
// copies again under the same keys (fed-<id>-<attempt>) and never others;
// copies moved away are cancelled (Reconcile) only after a write under the
// term succeeded, so a deposed dispatcher that has not heard yet cancels none.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "berth/common/clock.h"
#include "berth/federation/dispatch.h"
#include "berth/federation/federation.h"
#include "berth/fedserve/member_link.h"
#include "berth/job/lifecycle.h"
#include "berth/server/job_json.h"
#include "berth/server/log.h"
#include "berth/server/service.h"
#include "berth/store/store.h"

namespace berth::fedserve {

struct DispatcherOptions {
  std::string policy = "global";          // federation::ParsePolicy (not multikueue)
  TimeUs poll_interval = 500'000;         // digests and the states of jobs at members
  TimeUs member_timeout = 5'000'000;      // no call answered this long: the member is down
  TimeUs requeue_running_after = 60'000'000;  // down this long: its running jobs are re-dispatched
  TimeUs tick = 20'000;                   // the loop's longest sleep
  TimeUs request_timeout = 30'000'000;    // a submission's longest wait for the store
  int32_t batch_min = 8;                  // a batch this large is solved as an assignment LP
  double member_speedup = 1.0;            // the members' --speedup: wall run time x this = job time
  LinkOptions link;                       // token, CA and timeout of the calls to members
  server::AdmissionLimits limits;
  Status Validate() const;
};

class Dispatcher {
 public:
  // `endpoints[m]`: member m's URL (every member needs one).
  Dispatcher(const federation::Federation& fed, std::vector<std::string> endpoints, store::Store& store,
             DispatcherOptions options, server::Logger& log);
  ~Dispatcher();

  // Takes the store's term, rebuilds the jobs from its records, starts the loop.
  Status Start();
  void Stop();
  bool ready() const { return ready_.load(); }

  // --- the role (dispatcher_role.cc) ---
  enum class Role { kIdle, kAcquiring, kLoading, kLeading, kSteppedDown };
  Role role() const { return role_.load(); }
  static const char* RoleName(Role r);
  // Stops deciding at once (the term is lost): no forward, cancel or write
  // follows; the API answers 503. Safe from any thread, more than once.
  void StepDown(const std::string& reason);
  bool stepped_down() const { return role_.load() == Role::kSteppedDown; }
  // The 503 of every API call while not leading: the role, and the leader
  // as the store knows it ({"id", "address"} as replicas announce themselves).
  server::ApiResult NotReady() const;

  // --- the API (the same documents as a member's where they overlap) ---
  server::ApiResult SubmitJob(const std::string& body);
  server::ApiResult GetJob(int64_t id);
  server::ApiResult WhyJob(int64_t id);
  server::ApiResult ListJobs(const std::string& state, int64_t after, int64_t limit);
  server::ApiResult CancelJob(int64_t id);
  // GET /v1/federation: members (up, endpoint, digest, leases), counters.
  server::ApiResult Federation();
  std::string MetricsText();

  // Runs one turn of the loop now (tests; the loop thread must not run).
  void TurnForTest() { Turn(); }

 private:
  enum class Phase { kWaiting, kSending, kAtMember, kEnded };
  struct Copy {  // an earlier attempt to cancel on its member when it answers
    int32_t member = -1;
    int32_t attempt = 0;
    int64_t member_job = -1;  // -1: the forward's answer was never seen
    int32_t part = -1;        // >= 0: part `part` of a split gang (of `parts`, its tasks from rank_offset)
    int32_t parts = 0, tasks = 0, rank_offset = 0;
  };
  // One part of a gang split across regions (dispatcher_span.cc).
  struct Part {
    int32_t member = -1;
    int32_t tasks = 0;
    int32_t rank_offset = 0;
    int32_t type = -1;          // the card type the plan chose there
    int64_t member_job = -1;    // -1: not acknowledged yet
    bool sent = false;          // a submission went out (or may have, before a restart)
    int64_t ledger_attempt = -1;
    job::JobState state = job::JobState::kPending;
    std::vector<std::string> nodes;
    federation::Estimate estimate;  // the plan's, of the part alone there
  };
  // Why and how a gang was split: the plan's estimate against the best whole one.
  struct SpanInfo {
    TimeUs at = 0;              // wall clock of the plan
    TimeUs run = 0, finish = 0;  // the spanning run; the estimated finish (absolute)
    double cost_usd = 0;
    int32_t whole_member = -1;  // the member the whole job would have gone to (-1: none holds it now)
    TimeUs whole_finish = -1;
    TimeUs deadline = 0;        // wall clock: every part runs by then, or every lease lapses
    TimeUs running_since = -1;  // wall clock: every part running
    int32_t failures = 0;       // gangs stopped by a part that failed at its member
    bool ran = false;           // some split run of the job has started (counted once)
  };
  struct Candidate {
    int32_t member = -1;
    federation::Estimate estimate;
    TimeUs at = 0;  // when it was made (wall clock)
  };
  struct Job {
    int64_t id = -1;
    std::string key, fingerprint;
    job::JobSpec spec;
    TimeUs remaining = -1;  // duration still to run (after a requeue from a checkpoint); -1: the spec's
    federation::Checkpoint ckpt;  // where its last checkpoint is (region -1: none)
    TimeUs send_after = 0;        // wall clock: its checkpoint is in the member's region (forwarded then)
    int32_t dataset = -1;
    bool durable = false;
    std::shared_future<Status> accepted;
    TimeUs accepted_at = 0;
    Phase phase = Phase::kWaiting;
    job::JobState state = job::JobState::kPending;  // as the API shows it
    int32_t member = -1;
    int32_t attempt = 0;  // of the current assignment (1, 2, ...)
    int64_t member_job = -1;
    int64_t ledger_attempt = -1;  // its entry in the ledger (-1: none)
    bool promise = false;
    TimeUs sent_at = -1, started_at = -1, finished_at = -1;
    TimeUs dispatched_at = -1;  // wall clock: the member acknowledged the current copy
    double run_seen_s = 0;        // wall seconds seen running in the current attempt
    std::vector<std::string> nodes;
    std::string why, end_reason;
    std::vector<int32_t> excluded;  // members that refused it as never fitting
    std::vector<Copy> stale;        // copies left on members it moved away from
    std::vector<Candidate> candidates;  // the estimates of the last decision
    int32_t requeues = 0;
    bool cancel_requested = false;
    std::vector<Part> parts;  // non-empty: the current attempt is a split gang (member is then -1)
    SpanInfo span;
  };
  struct MemberState {
    std::unique_ptr<MemberLink> link;                // digests, job lists, cancels
    std::vector<std::unique_ptr<MemberLink>> pool;  // forwards, in parallel
    bool up = true;  // until proven otherwise: a member starts up with its empty cluster's digest
    bool ever_reached = false;
    TimeUs last_ok = 0;     // steady clock of its last answered call
    TimeUs down_since = 0;  // steady clock
    TimeUs next_poll = 0;
    TimeUs last_job_poll = 0;
    std::string last_error;
    int64_t down_events = 0;
    // The digest poll in flight (the loop never waits for it: a member that
    // hangs holds only its own poll), and when it went out (steady clock).
    std::future<std::pair<MemberReply, TimeUs>> poll;
    bool polling = false;
    TimeUs poll_started = 0;
    bool last_poll_failed = false;  // the last digest poll taken got no digest (refused, error, timeout)
    // The member's lease (wall clock): the latest end granted, and whether the
    // poll in flight grants one. Never past last_ok + 3/4 member_timeout, so
    // every lease has lapsed when the member is marked down.
    TimeUs lease_until = 0;
  };
  struct Counters {
    int64_t dispatches = 0, promises = 0, double_promises = 0, redispatches = 0, refusals = 0;
    int64_t leases_expired = 0, leases_released = 0, duplicates_cancelled = 0, requeued_running = 0;
    int64_t batches = 0, forward_retries = 0;
    int64_t checkpoint_moves = 0;
    double checkpoint_bytes = 0, checkpoint_egress_usd = 0;
    int64_t spanning_jobs = 0, spanning_parts = 0, span_releases = 0, span_breaks = 0;
  };
  // The body of a kJobAssigned record (`outcome`: sent, accepted, refused).
  nlohmann::json AssignedBody(const Job& j, const std::string& outcome) const;

  Status Recover();
  // A write that failed: the state in memory is ahead of the store, so the
  // dispatcher steps down (the next leader, or a restart, rebuilds from it).
  void OnWriteFailed(const std::string& what, const Status& s);
  bool leading() const { return role_.load() == Role::kLeading; }
  // Reads a job_assigned record's remaining_s and checkpoint into j.
  Status RecoverProgress(Job& j, const nlohmann::json& b, const std::string& where) const;
  // POSTs each body to /v1/jobs of its member, every member's at once.
  void PostJobs(const std::vector<std::pair<int32_t, const std::string*>>& posts, std::vector<MemberReply>& replies,
                std::vector<TimeUs>& answered);
  // Writes `recs` and waits: true if they are durable under the term still
  // held (else the dispatcher has stepped down).
  bool WriteUnderTerm(std::vector<store::Record> recs, const std::string& what);
  void Loop();
  void Turn();
  // Each takes and releases the lock around the calls it makes.
  void PollMembers(TimeUs now);
  void PollJobs(TimeUs now);
  void HandleDownMembers(TimeUs now);
  // With mu_ held: the member answers (its last digest poll succeeded and
  // none is outstanding past half the member timeout); the loop's direct calls
  // (forwards, job lists, cancels) go only to responsive members.
  bool ResponsiveLocked(size_t m, TimeUs now) const;
  // With mu_ held: the digest poll's path, with a lease when the member is up
  // and has no copies left to cancel.
  std::string DigestPathLocked(size_t m, TimeUs now);
  // With mu_ held: a digest poll's answer.
  void ApplyDigestLocked(size_t m, const MemberReply& r, TimeUs after, bool& returned);
  void DispatchWaiting(TimeUs now);
  void SendAssigned(TimeUs now);
  void DoCancels();
  // With mu_ held: a member's document of the job's current copy.
  void ApplyMemberDoc(Job& j, const nlohmann::json& doc);
  void Reconcile(int32_t member);
  // With mu_ held.
  federation::EstimateContext ContextLocked(TimeUs now);
  void MoveAwayLocked(Job& j, const std::string& why);
  void EndLocked(Job& j, job::JobState state, const std::string& reason);
  std::string ForwardBody(const Job& j) const;

  // --- gangs across regions (dispatcher_span.cc); *Locked: with mu_ held ---
  // Whether job `j` (request `r`, the policy's choice `c`) goes split: sent
  // under leases (true), waiting for a split (true), or not (false: whole as `c` says).
  bool TrySpanLocked(Job& j, const federation::Request& r, const federation::Choice& c, TimeUs wall, TimeUs now);
  // The kJobAssigned body of a split attempt (`outcome`: sent, accepted, released).
  nlohmann::json SpanAssignedBody(const Job& j, const std::string& outcome) const;
  store::Record SpanRecord(const Job& j, const std::string& outcome) const;
  // Folds a split attempt's record back (Recover).
  Status RecoverSpan(Job& j, const nlohmann::json& body, const std::string& where);
  // The submission of part `part` of a split attempt (a forward, or a Reconcile of its copy).
  std::string PartBody(const Job& j, const Copy& c) const;
  // Submits the parts of split attempts whose leases are all granted; lapses the others.
  void SendSpans(TimeUs now);
  // Every part of the current attempt to its member's copies to cancel, the
  // ledger released, the job waiting for dispatch (re-dispatched).
  void ReleaseSpanLocked(Job& j, const std::string& why);
  // A split gang stopped (a part failed, or a part's member is down): from
  // its checkpoint when it ran, then ReleaseSpanLocked.
  void BreakSpanLocked(Job& j, const std::string& why, bool part_failed);
  void ApplyPartDocLocked(Job& j, size_t k, const nlohmann::json& doc);
  // A user's cancel of a split gang: its parts are copies to cancel.
  void CancelSpanLocked(Job& j);
  // Member `m` is down: every split attempt with a part there breaks.
  void SpanMemberDownLocked(int32_t m);
  // Parts followed at member `m`: the range of their member jobs (PollJobs).
  void SpanRangeLocked(int32_t m, int64_t& lo, int64_t& hi) const;
  void ApplySpanDocsLocked(int32_t m, const std::unordered_map<int64_t, nlohmann::json>& docs, bool complete);
  nlohmann::json SpanJson(const Job& j) const;
  void ReleasePartLeasesLocked(Job& j);
  // Copies of job `j`'s current attempt a later one supersedes (Recover).
  void SupersedeLocked(Job& j, int32_t attempt);
  void AppendAssigned(const Job& j, const std::string& outcome, bool wait);
  void Append(store::Record rec, bool wait);
  nlohmann::json JobJson(const Job& j, bool detail) const;
  TimeUs SteadyNow() const;

  const federation::Federation& fed_;
  store::Store& store_;
  DispatcherOptions options_;
  server::Logger& log_;
  SystemClock clock_;
  federation::Policy policy_ = federation::Policy::kGlobal;
  std::unique_ptr<federation::Dispatcher> dispatcher_;
  federation::SpeedTable speed_;
  std::vector<std::vector<federation::TypeDigest>> capacity_;
  std::vector<std::vector<TimeUs>> link_busy_;
  store::Fence fence_;
  std::atomic<bool> ready_{false};
  std::atomic<Role> role_{Role::kIdle};

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false, wake_ = false;
  std::thread loop_;
  std::vector<MemberState> members_;
  std::vector<federation::Digest> views_;
  std::vector<std::vector<federation::InFlight>> in_flight_;
  std::map<int64_t, Job> jobs_;
  std::unordered_map<std::string, int64_t> by_key_;
  std::set<int64_t> waiting_;  // phase kWaiting, durable
  bool stale_dirty_ = true;  // some job has copies to cancel (checked on members that are up)
  int64_t next_id_ = 1;
  int64_t next_ledger_attempt_ = 1;
  Counters counters_;
};

}  // namespace berth::fedserve
