// The scheduler: the one core that the simulator and the server both drive.
// It owns the cluster state and the pending queue, and runs scheduling cycles
// through the framework's plugins. Time comes from an injected clock; random
// choices from a seeded generator; ties go to the lowest node rank.
//
//   Scheduler s(cluster, std::move(framework), options, clock);
//   s.Submit(job);          // validated, queued (pending)
//   s.Schedule();           // one pass over the queue: place what fits
//   s.Finish(id, JobState::kSucceeded);  // releases its GPUs
//
// Gangs are all or nothing: the tasks of a job are reserved one by one in the
// state (so later tasks see earlier ones), and rolled back through the same
// Apply path if any group falls short of its gang minimum or a permit rejects.
#pragma once

#include <deque>
#include <map>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "berth/common/clock.h"
#include "berth/common/id_index_map.h"
#include "berth/common/rng.h"
#include "berth/framework/registry.h"
#include "berth/job/job.h"
#include "berth/job/lifecycle.h"
#include "berth/scheduler/bucket_queue.h"
#include "berth/scheduler/class_score_cache.h"
#include "berth/scheduler/decision_log.h"
#include "berth/scheduler/group_score_cache.h"
#include "berth/scheduler/index_search.h"
#include "berth/state/cluster_state.h"
#include "berth/tenancy/ledger.h"

namespace berth::scheduler {

struct SchedulerOptions {
  uint64_t seed = 0;
  // FGD protocol: a job that does not fit at its first attempt fails at once.
  bool drop_unschedulable = false;
  // Tie-break rank per node id (lower wins). Empty: by node id.
  std::vector<int32_t> node_rank;
  // Filter and score every node for every task: no candidate plugins, no
  // index search. The decisions are the same (the exactness tests compare the
  // two); this is the oracle they are compared with.
  bool full_scan = false;
  // Sort the whole pending queue with the queue-sort plugin's Less at every
  // pass, even when the plugin's order is bucketed (bucket_queue.h). The same
  // order; the oracle the incremental queue is compared with. full_scan
  // implies it.
  bool full_sort = false;
  // Give preemption post-filters no epoch (SchedulerView::epoch 0), so that
  // they rebuild their view of the running jobs for every blocked job instead
  // of keeping it while nothing changes. The same decisions; the oracle the
  // cached path is compared with. full_scan implies it.
  bool full_preempt = false;
  // Try preemption for every blocked job of a preempting profile, and never
  // stop its pass early, even when the post-filters promise that no pending
  // job can get a plan (PostFilterPlugin::NoPlanForAny); and, for any
  // profile, reach every job a pass goes through (no passing over the jobs
  // short of free GPUs, or the runs of queues that can get no plan). The same
  // decisions and the same verdicts for the jobs a pass reaches; the oracle
  // the early stop is compared with. full_scan implies it.
  bool full_pass = false;
  // Verify every index against a recomputation after each change (tests).
  bool check_indexes = false;
  // The queue tree jobs are charged to (null: every tenant gets its own
  // unconstrained leaf). Decayed usage for fair share uses the half-life.
  std::shared_ptr<const tenancy::QueueTree> queues;
  TimeUs usage_half_life = 0;
  // Converts GPUs to the tree's unit when it counts normalized GPUs
  // (tenancy/units.h; null: every GPU counts one). With a tree in GPUs it
  // only feeds the records' reference-GPU figures.
  std::shared_ptr<const tenancy::SpeedModel> speeds;
  // Preemption (post-filter plugins): evictees get `preemption_grace` to
  // checkpoint and leave, so the preemptor's work starts that much later; a
  // job resuming from a checkpoint spends `restore_cost` before working.
  TimeUs preemption_grace = 0;
  TimeUs restore_cost = 0;
  // Yield deadlines per class of evictee (co-location: how soon capacity lent
  // to batch work comes back; docs/services.md, "Co-location"). The preemptor
  // works after the longest deadline of the jobs it evicted:
  //   best-effort evictee (JobSpec::best_effort): `yield_best_effort`; it
  //     loses the work since its last checkpoint;
  //   checkpointing evictee: its next checkpoint if that comes within
  //     `yield_training_grace` (it loses nothing), else that grace (it loses
  //     the work since its last checkpoint);
  //   others, and either deadline left at -1: `preemption_grace`, losing the
  //     work since the last checkpoint (the behaviour without deadlines).
  TimeUs yield_best_effort = -1;
  TimeUs yield_training_grace = -1;
  // Elastic jobs shrink instead of being evicted (when the preemption plan
  // allows it) and grow back when nothing is pending. Off: they run at the
  // size they start with (the live service, whose bindings do not follow
  // resizes yet).
  bool elastic_resize = false;
};

struct JobRecord {
  job::JobSpec spec;
  job::JobState state = job::JobState::kPending;
  int64_t seq = 0;
  TimeUs enqueue_time = 0;
  TimeUs first_start_time = -1;
  TimeUs start_time = -1;
  TimeUs finish_time = -1;
  std::vector<framework::TaskPlacement> placements;
  // The latest verdict. A pass that stops early (no pending job can fit the
  // free GPUs) leaves the verdicts of the jobs it did not reach as they were.
  framework::Verdict last_verdict;
  // What the job adds to its queue's demand (reachable entitlement), from
  // submission until it ends.
  tenancy::DemandToken demand;
  int32_t attempts = 0;  // full placement attempts (fast capacity rejections not counted)
  double attained_gpu_seconds = 0;  // GPU-seconds held over all runs that ended
  int32_t queue = -1;               // leaf queue in the ledger
  // What the current run is charged in the ledger's unit (milli-GPU or
  // milli-reference-GPU; 0 when not running), and the unit x seconds of its
  // runs that ended (units, not milli: 1 = one GPU or reference GPU for 1 s).
  int64_t charge = 0;
  double attained_charge_seconds = 0;
  // The same in reference GPUs whenever the scheduler has a speed model
  // (SchedulerOptions::speeds), even when the tree counts GPUs (reports).
  int64_t ref_charge = 0;
  double attained_ref_seconds = 0;
  // Checkpoints and preemption. A run starts at start_time; its work begins
  // after `startup_delay` (grace of the jobs it evicted, restore cost); work
  // saved by checkpoints of earlier runs is `work_done` (runtime units).
  TimeUs startup_delay = 0;
  TimeUs work_done = 0;
  int32_t preemptions = 0;
  double lost_gpu_seconds = 0;  // GPUs x work lost (since the last checkpoint) at evictions
  JobId preempted_by;           // the job whose preemption evicted it last (invalid: none)
  // Failures (Interrupt, RepairTask): whole-gang restarts and in-place
  // repairs; GPUs x work lost since the last checkpoint; GPUs x restart or
  // repair time spent without progress.
  int32_t restarts = 0;
  int32_t repairs = 0;
  double failure_lost_gpu_seconds = 0;
  double recovery_gpu_seconds = 0;
  // Elastic jobs: resizes so far, and a counter bumped whenever the job's
  // allocation changes (start, resize, eviction, end) for drivers that follow
  // allocations (the simulator's progress model).
  int32_t resizes = 0;
  int64_t alloc_version = 0;
  int32_t requested_tasks = 0;  // the size it grows back to after a shrink for another job
  int32_t shrinks = 0;          // shrinks instead of an eviction
  // The capacity class of the current run (set when it starts), and whether
  // the next start is on idle capacity because its queue's budget is spent.
  framework::RunClass run_class = framework::RunClass::kGuaranteed;
  bool start_over_budget = false;
  // Starts by class, evictions of best-effort runs, and whether the job ever
  // waited because its queue's budget was spent (reports).
  int32_t best_effort_starts = 0;
  int32_t over_budget_starts = 0;
  int32_t best_effort_evictions = 0;
  bool waited_for_budget = false;
};

class Scheduler {
 public:
  Scheduler(const cluster::Cluster& cluster, std::unique_ptr<framework::Framework> framework,
            SchedulerOptions options, const Clock& clock);

  // Validates and queues a job. Errors name the job and field; nothing else changes.
  Status Submit(job::JobSpec spec);
  // One pass over the pending queue in queue-sort order. Returns the jobs started.
  //
  // With `out_of_time` (the live service's time budget), the pass asks it
  // before each job after the first: when it answers true, the pass stops
  // there and the next Schedule() continues from that job (if it is still
  // pending) to the end of the queue instead of starting at the head, so a
  // long queue is visited in slices and every job is still reached.
  // last_pass_split() says whether the last pass stopped so.
  std::vector<JobId> Schedule(const std::function<bool()>& out_of_time = nullptr);
  bool last_pass_split() const { return resume_index_ >= 0; }
  // The pending jobs the last Schedule() reached (their verdicts may have
  // changed; some may have started or failed), in the order it reached them.
  const std::vector<JobId>& visited_in_last_pass() const { return visited_; }
  // Ends a running (or pending) job: succeeded, failed or cancelled. Releases its tasks.
  Status Finish(JobId id, job::JobState final_state);
  // Evicts a running job: releases its tasks and requeues it. The work since
  // its last checkpoint is lost (counted in lost_gpu_seconds).
  Status Preempt(JobId id);
  // A failure stops a running job: the whole gang is released and requeued
  // (not a preemption: restarts, failure_lost_gpu_seconds). It resumes from
  // its last checkpoint, or from now when `checkpoint_now` (planned
  // maintenance checkpoints before the drain), and its next run spends
  // `restart_cost` before working. Errors: not found, not running.
  Status Interrupt(JobId id, TimeUs restart_cost, bool checkpoint_now);
  // In-place repair: task `task_index` of a running job moves to `alloc` (a
  // spare or free node; its rank is kept) while the rest of the gang keeps its
  // GPUs. The gang rolls back to its last checkpoint (or now, with
  // `checkpoint_now`) and works again after `repair_cost`. The old placement
  // is released first, so `alloc` may reuse the node's other GPUs. Errors: not
  // found, not running, no such task, `alloc` does not fit (nothing changes).
  Status RepairTask(JobId id, int32_t task_index, const state::Allocation& alloc, TimeUs repair_cost,
                    bool checkpoint_now);
  // Starts a pending job on placements decided earlier (recovery after a
  // restart, or a binding made outside this process): applies them through the
  // same state path, all or nothing. Errors: not found, not pending, a
  // placement that does not belong to the job or does not fit (nothing changes).
  Status Adopt(JobId id, std::span<const framework::TaskPlacement> placements, TimeUs start_time);
  // One task of a running job ends on its own (a pod of a gang completed or
  // was deleted): its resources are released through the same state path and
  // the job keeps running on the rest. When its last task goes, the job ends
  // with `final_state` (a terminal state). Errors: not found, not running, no
  // placement for that task (nothing changes).
  Status ReleaseTask(JobId id, int32_t task_index, job::JobState final_state);
  // Elastic jobs (JobSpec::elastic). Resize changes a running job to `tasks`
  // workers (elastic_min()..max_workers): a shrink releases its highest-ranked
  // tasks, a growth places the whole gang again at the new size through the
  // profile's plan, filter and score plugins (so it lands consolidated), all
  // through the state's Apply path. Either way the job's work restarts after
  // its resize_cost. A growth that does not fit leaves the job as it was
  // (FailedPrecondition, nothing changes). Errors: not found, not running,
  // not elastic, size out of bounds.
  Status Resize(JobId id, int32_t tasks, std::string_view why = "resize");
  // Sets the size a pending elastic job will start with (exactly `tasks`).
  Status SetPendingSize(JobId id, int32_t tasks);
  // Marks a node (un)schedulable.
  Status SetNodeUp(NodeId node, bool up);
  // Takes one GPU of a node out (or back); no task may hold it (state::SetGpuUp).
  Status SetGpuUp(NodeId node, int32_t gpu, bool up);

  const JobRecord* Find(JobId id) const;
  // Drops the record of a job in a terminal state: Find returns null for it
  // afterwards and a later Submit reuses its slot, so the records held follow
  // the jobs alive rather than every job ever submitted. For drivers that keep
  // what they need of a finished job themselves (the replay). Decisions do not
  // change: ties go by submission order, never by slot. Errors: not found, not
  // in a terminal state.
  Status Forget(JobId id);
  // Job records held (pending, running and finished jobs not forgotten).
  size_t records() const { return index_of_.size(); }
  // Jobs evicted by preemption during the last Schedule() (requeued).
  const std::vector<JobId>& preempted_in_last_pass() const { return preempted_; }
  // Runs of one leaf queue's pending jobs that passes went past without
  // reaching them (no job fits, and no job of the queue can get a plan).
  int64_t queue_runs_passed_over() const { return queue_runs_passed_over_; }
  const tenancy::Ledger& ledger() const { return ledger_; }
  std::span<const framework::RunningJob> running_jobs() const { return running_jobs_; }
  const state::ClusterState& state() const { return state_; }
  const cluster::Cluster& cluster() const { return cluster_; }
  const framework::Framework& framework() const { return *framework_; }
  size_t pending_count() const { return pending_.size(); }
  size_t running_count() const { return running_; }
  DecisionLog& log() { return log_; }
  const DecisionLog& log() const { return log_; }
  Rng& rng() { return rng_; }
  // How placements chose their node so far: from the state's indexes
  // (index_search.h), from the scores kept for a group of identical tasks
  // (group_score_cache.h), from the scores a node-local plugin's task class
  // keeps (class_score_cache.h), or by filtering and scoring every node (a
  // candidate plugin's short list counts as none; so does a task the caches
  // show fits nowhere).
  struct PlacementCounts {
    int64_t index_search = 0;
    int64_t full_scan = 0;
    int64_t group_cache = 0;
    int64_t class_cache = 0;
    // Tasks that fit nowhere whose verdict came from the indexes, not a scan.
    int64_t counted_from_indexes = 0;
  };
  const PlacementCounts& placement_counts() const { return placement_counts_; }
  // The earliest time after `now` when the budget of a queue that stopped a
  // job in the last pass renews (a new period, or a rolling window's oldest
  // bucket leaving it), or -1: drivers schedule a pass then.
  TimeUs NextBudgetRenewal(TimeUs now) const;
  // The earliest time after `now` when a pending service replica's verdict
  // can change because a running job passes a preemption plugin's time guard
  // (PostFilterPlugin::NextGuardExpiry: --min-runtime), so that the replica
  // may evict it then; -1 when no replica is pending or no guard expires.
  // Drivers schedule a pass then (the replay, `berth simulate --services`,
  // `berth serve`), so that a replica waits for the guard and not for the
  // next event. Batch jobs are not woken so: they are retried at the next
  // event, as before; a replica's wait is what the yield bound measures.
  TimeUs NextGuardExpiry(TimeUs now) const;

 private:
  // Whether the run of `rec` just charged is beyond its queue's guarantee:
  // in some dimension it holds, no queue on its path with a quota there is
  // within its guarantee (a path without quotas there is unconstrained).
  bool BeyondGuarantee(const JobRecord& rec) const;
  struct PlaceOutcome {
    bool ok = false;
    state::Allocation alloc;
    framework::Verdict verdict;
  };
  framework::Verdict TryPlace(JobRecord& rec);
  // `repeats`: tasks of this same request the caller has left to place,
  // this one included (large runs use the group score cache).
  PlaceOutcome PlaceTask(const framework::CycleContext& ctx, const framework::TaskRequest& req, int32_t repeats = 1);
  // Interrupt and RepairTask: the stopped run's work kept and lost.
  static void KeepWorkUntilCheckpoint(JobRecord& rec, const framework::RunningJob& run, TimeUs now,
                                      bool checkpoint_now);
  // The outcome of placing `req` on `best`: the GPUs the score plugins (or the default) select.
  PlaceOutcome Chosen(const framework::CycleContext& ctx, const framework::TaskRequest& req, NodeId best) const;
  // The one score plugin that decides the task on a fast path (the profile's
  // only one, or the only one not neutral for the task), or nullptr.
  const framework::ScorePlugin* Decider(const framework::CycleContext& ctx, const framework::TaskRequest& req) const;
  // A task decided by two score plugins (the others neutral for it): one that
  // scores by GPU type (ScorePlugin::ScoresByType) and one that bounds its
  // scores, both normalized by range. Each type's best node comes from the
  // index search, the lowest score from its floors, and the types are
  // compared as the scan compares nodes. nullopt: scan instead.
  std::optional<NodeId> PlaceByType(const framework::CycleContext& ctx, const framework::TaskRequest& req);
  // For a task that no node passes (after the index search found none): the
  // scan's reject counts (reject_count_) from the indexes, without filtering
  // every node. Applies when fit is the first filter and every other one
  // decides by GPU type or passes every node for the task: then a node that
  // passes fit is in the index's tiers, and the first filter it fails after
  // fit is the same for every node of its type. False: scan instead.
  bool CountRejectsFromIndexes(const framework::CycleContext& ctx, const framework::TaskRequest& req);
  // Whether every filter but fit passes every node for the task.
  bool OnlyFitFilters(const framework::CycleContext& ctx, const framework::TaskRequest& req) const;
  uint64_t DefaultGpus(const framework::TaskRequest& req, NodeId node) const;
  // Whether every GPU of `mask` on `node` holds the task's share and GPU memory.
  bool MaskHoldsMemory(const framework::TaskRequest& req, NodeId node, uint64_t mask) const;
  // For a task that states gpu_memory_mib and fits nowhere: "; GPU memory
  // (N MiB per GPU): A nodes' GPUs are smaller, B lack free GPU memory" (the
  // nodes that would hold the task but for its GPU memory), or "".
  std::string GpuMemoryWhy(const framework::CycleContext& ctx, const framework::TaskRequest& req) const;
  bool StaticallyFeasible(const framework::TaskRequest& req) const;
  void Rollback(JobRecord& rec);
  bool CapacityShort(int32_t index);
  // Whole-GPU tasks of `gpus` GPUs that the free GPUs of up nodes of the
  // accepted types could hold (sum of floor(free / gpus)); cached per pass.
  int64_t TasksThatFit(int32_t gpus, const cluster::GpuTypeSet& types);
  void Enqueue(int32_t index);
  void Dequeued(int32_t index);  // bookkeeping of a job leaving pending_
  void RemovePending(int32_t index);
  Status ApplyChecked(const state::Event& e);
  bool QueueLess(int32_t a, int32_t b) const;
  framework::QueuedJob Queued(int32_t index) const;
  // Bookkeeping of a run that starts or ends: running list, ledger, attained service.
  void RunStarted(int32_t index, TimeUs now);
  void RunEnded(int32_t index, TimeUs now, bool completed);
  // Returns the amount charged (in the ledger's unit, unsigned).
  int64_t ChargeLedger(const JobRecord& rec, int64_t sign, TimeUs now);
  std::vector<int32_t> budget_blocked_;  // queues whose spent budget stopped a job in the last pass
  int64_t pending_replica_jobs_ = 0;         // jobs in pending_ with replica_of set (Enqueue, Dequeued)
  // milli-GPU of `rec` on `type` in reference GPUs (milli itself without a speed model).
  int64_t RefAmount(const JobRecord& rec, GpuTypeId type, int64_t milli) const {
    return options_.speeds && type.valid() ? tenancy::ScaleMilli(milli, options_.speeds->PerMillion(rec.spec, type))
                                           : milli;
  }
  // Shrinks a running elastic job to `tasks` by releasing its highest ranks.
  Status ShrinkTo(int32_t index, int32_t tasks, std::string_view why);
  Status ResizeIndex(int32_t index, int32_t tasks, std::string_view why, bool requested);
  // Preemption of elastic victims: shrinks them worker by worker until the
  // job fits (true: it was placed).
  bool ShrinkForJob(int32_t index, std::span<const JobId> victims, std::vector<JobId>& evict);
  // Elastic jobs shrunk for others grow back to their requested size when
  // nothing is pending.
  void GrowShrunk();
  std::vector<int32_t> shrunk_;  // job indexes shrunk below their requested size
  // Demand of a job from its spec (fast capacity checks).
  void ComputeDemand(int32_t index);
  // Evicts a running job (whole gang); requeues it now or after the pass.
  // When and how a running job gives its GPUs back if evicted now (the yield
  // deadlines of SchedulerOptions): after `delay`, keeping its work up to
  // then (it checkpoints at that moment) or only up to its last checkpoint.
  struct YieldPoint {
    TimeUs delay = 0;
    bool keeps_work = false;
  };
  YieldPoint YieldOf(int32_t index, TimeUs now) const;
  std::vector<uint8_t> ruled_out_scratch_;  // TryPreempt's per-node masks: a reservation's nodes
  std::vector<uint8_t> avoid_scratch_;      // ruled out or avoided (TryPreempt's first tier)
  std::vector<uint8_t> limit_scratch_;      // at a limit of the job's own (FilterPlugin::NodeRule kLimit)
  std::vector<uint8_t> tier_scratch_;       // a tier's nodes with the limits'

  Status Evict(int32_t index, JobId preemptor, bool defer_requeue, const YieldPoint* yield = nullptr);
  // Asks the post-filter plugins for victims; evicts them and places the job.
  // `verdict` (why it was not placed) is moved from, and returned amended
  // when no plan is found.
  framework::Verdict TryPreempt(int32_t index, framework::Verdict&& verdict, TimeUs now);
  framework::SchedulerView View(TimeUs now) const;

  const cluster::Cluster& cluster_;
  std::unique_ptr<framework::Framework> framework_;
  SchedulerOptions options_;
  const Clock& clock_;
  Rng rng_;
  state::ClusterState state_;
  DecisionLog log_;

  tenancy::Ledger ledger_;
  std::deque<JobRecord> jobs_;  // a deque: records (and their placements) never move
  IdIndexMap<JobId> index_of_;  // lookups only (no iteration)
  std::vector<int32_t> pending_;  // sorted by QueueLess (a bucketed order: at the start of each pass)
  // A bucketed dynamic order (framework::BucketedOrder) keeps the pending
  // jobs here too, and a pass takes its order from it instead of sorting.
  const framework::BucketedOrder* bucketed_ = nullptr;
  BucketQueue bucket_queue_;
  bool WithinQueueLess(int32_t a, int32_t b) const;
  BucketQueue::Less within_less_;
  int32_t resume_index_ = -1;     // the job a pass split by its time budget continues at
  std::vector<JobId> visited_;    // by the last pass

  // Per job: what it needs at the least (from its spec) for the pass's fast
  // capacity checks (necessary conditions of placement read from counters),
  // and how its verdict was last set.
  struct Demand {
    int64_t whole_gpus = 0;  // sum over whole-GPU groups of gang_min x gpus
    bool whole_only = true;  // no GPU-share group
    bool checkable = false;  // every group statically feasible (else TryPlace gives Unresolvable)
    bool too_big = false;    // whole_only, and more whole GPUs than the cluster has: never fits
    bool gpu_bound = false;  // checkable, whole_only, not too_big, whole_gpus >= 1
    bool full_verdict = false;  // last_verdict comes from a full placement attempt
    int64_t seen_pass = -1;     // the last pass that reached the job
    // The free whole GPUs named by its verdict when that is the capacity
    // verdict ("needs N GPUs, F free"), else -1.
    int64_t capacity_free = -1;
    // As counted in the pending summary when the job was queued.
    int32_t counted_queue = -1;
    int32_t counted_priority = 0;
    bool counted_replica = false;
  };
  std::vector<Demand> demand_;  // per job index
  // Pending gpu_bound jobs by whole_gpus (-> count), and the number of other
  // pending jobs: when no other job is pending and the free GPUs are fewer
  // than the smallest need, nothing pending can start and a pass stops.
  std::map<int64_t, int32_t> pending_need_;
  int64_t pending_other_ = 0;
  // The pending jobs in brief for the post-filters (framework::PendingSummary):
  // per leaf queue, by priority (-> count), and the service replicas.
  std::vector<int32_t> pending_per_queue_;
  std::map<int32_t, int32_t> pending_priority_;
  int64_t pending_replicas_ = 0;
  // Whether every post-filter promises no plan for any pending job
  // (NoPlanForAny), asked at most once per epoch within a pass.
  bool NoPlanForAny(TimeUs now);
  // The same promise for the pending jobs of one leaf queue (with the pass's
  // highest pending priority and replica count), and for one job; each asked
  // at most once per queue, pass and epoch (and the job's priority).
  bool NoPlanForQueue(int32_t queue, TimeUs now);
  bool NoPlanForJob(int32_t index, TimeUs now);
  struct QueuePromise {
    int64_t pass = -1;
    uint64_t epoch = 0;
    bool value = false;
    int64_t job_pass = -1;
    uint64_t job_epoch = 0;
    int32_t job_priority = 0;
    bool job_replica = false;
    bool job_value = false;
  };
  std::vector<QueuePromise> queue_promise_;  // per leaf queue
  int64_t queue_runs_passed_over_ = 0;
  std::vector<int32_t> one_queue_;           // scratch: a summary's per-queue counts
  // Every pending job needs more whole GPUs than are free (counters only).
  bool CapacityBlocksAll() const;
  bool AdmitsObserveBlocked() const;  // some admit plugin's OnBlocked may still matter in this pass
  uint64_t no_plan_epoch_ = 0;
  bool no_plan_ = false;
  int64_t hopeless_stop_pass_ = -1;  // the last pass that stopped so (preempting profiles)
  // Per pass: up nodes of type t with exactly k fully free GPUs (counts), valid
  // until the next placement.
  std::vector<std::vector<int32_t>> bucket_count_;
  bool bucket_count_valid_ = false;
  int64_t pass_ = 0;            // passes run so far
  uint64_t epoch_ = 1;          // SchedulerView::epoch: bumped by every change of state, ledger or running jobs
  std::vector<int32_t> fresh_;  // jobs (re)queued since the last pass
  size_t running_ = 0;
  int64_t next_seq_ = 0;
  int64_t submitted_ = 0;                 // Submit calls that queued a job (the default id of the next)
  std::vector<int32_t> free_slots_;       // slots of forgotten jobs, reused by Submit (last freed first)
  std::vector<framework::RunningJob> running_jobs_;  // deterministic order (swap-remove)
  std::vector<int32_t> running_pos_;                 // per job index: slot in running_jobs_, or -1
  std::vector<int32_t> running_index_;               // per slot of running_jobs_: the job index
  // SchedulerView::lookup: running jobs by id, from index_of_ and running_pos_.
  class Lookup final : public framework::RunningLookup {
   public:
    void Bind(const Scheduler* s) { s_ = s; }
    int32_t SlotOf(JobId id) const override;

   private:
    const Scheduler* s_ = nullptr;
  };
  mutable Lookup lookup_;
  std::vector<int32_t> requeue_after_pass_;          // evicted during a pass
  std::vector<JobId> preempted_;

  // Per-type upper bounds of what any node offers, for "can never fit".
  struct TypeMax { int32_t gpus = 0; MilliCpu cpu = 0; MiB mem = 0; };
  std::vector<TypeMax> type_max_;
  TypeMax cpu_node_max_;

  // The index search, when this profile allows it (see index_search.h).
  bool use_index_search_ = false;
  IndexSearch index_search_;
  // The group score cache, when this profile allows it (see group_score_cache.h).
  bool use_group_cache_ = false;
  GroupScoreCache group_cache_;
  // The class score cache, for a node-local score (see class_score_cache.h).
  bool use_class_cache_ = false;
  // Several score plugins, of which those neutral for a task drop out.
  bool reducible_ = false;
  // The profile's filters other than fit (OnlyFitFilters asks them).
  std::vector<const framework::FilterPlugin*> extra_filters_;
  ClassScoreCache class_cache_;
  std::vector<MilliCpu> type_cpu_max_;
  // A node of each GPU type (-1: none), for the filters that decide by type.
  std::vector<int32_t> type_first_node_;
  // PlaceByType's scratch: each type's best node, its two raw scores.
  struct TypeBest {
    NodeId node;
    int64_t bounded = 0;
    int64_t typed = 0;
  };
  std::vector<TypeBest> by_type_;
  // CountRejectsFromIndexes: its scratch, and the nodes that pass fit per
  // GPU type (-1: not counted yet) and the up nodes, for one request at one
  // state version.
  std::vector<int32_t> tier_nodes_;
  uint64_t fit_memo_version_ = 0;
  framework::TaskRequest fit_memo_req_;
  std::vector<int32_t> fit_memo_;
  int32_t fit_memo_up_ = -1;
  std::vector<NodeId> norm_nodes_;
  std::vector<int64_t> norm_scores_, norm_typed_;
  PlacementCounts placement_counts_;

  // Scratch buffers reused across cycles.
  std::vector<NodeId> candidates_;
  std::vector<NodeId> feasible_;
  std::vector<int64_t> total_score_;
  std::vector<int64_t> plugin_score_;
  std::vector<int32_t> reject_count_;
};

}  // namespace berth::scheduler
