// The extension points. A plugin is a class implementing one or more of the
// interfaces below; the registry creates it by name and the framework asks it
// through each interface it implements. Contracts:
//
//   QueueSort  Less(a, b): strict weak order of pending jobs (ties: by seq).
//   Admit      may a job enter a scheduling cycle now (quota, dependencies)?
//   Plan       (optional) place a whole gang at once from the indexes, e.g.
//              topology-aware: returns every task's allocation in rank order,
//              a verdict (cannot), or no opinion (place task by task).
//   Filter     can this task run on this node? Pure; no state change.
//   Candidates (optional fast path) a short list of nodes to filter and score
//              instead of every node, from the indexes. Empty = scan all.
//   Score      higher is better, any int64 range; then Normalize over the
//              feasible nodes. The framework sums weight × score; ties go to
//              the lowest node rank. ScoreBound (optional) bounds the score
//              over a set of nodes from the indexes, so that the scheduler
//              finds the best node without scoring every node. NodeLocal
//              (optional) says a node's score changes only with the node, so
//              the scheduler may keep scores across decisions.
//   SelectGpus which GPUs of the chosen node (default: lowest-index free GPUs
//              for whole-GPU tasks, the fullest GPU that fits for shares).
//   Reserve    a task's allocation was tentatively applied; Unreserve undoes.
//   Permit     the whole gang is tentatively placed: allow, or reject (undo).
//   PostFilter a job could not be placed: propose victims (preemption): whole
//              running jobs whose eviction lets it fit now.
//   Bind       the placement is final: tell the outside world.
//   Resize     (periodic, elastic jobs) every RoundInterval() the driver
//              asks for the size (and batch) of every elastic job, pending
//              or running; it applies the answer through the scheduler's
//              Resize / SetPendingSize / Preempt and then runs a pass.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "berth/framework/cycle.h"
#include "berth/framework/verdict.h"
#include "berth/framework/workload_facts.h"
#include "berth/state/events.h"

namespace berth::elastic {
class GoodputCatalog;
}

namespace berth::framework {

// Named figures a plugin reports about a run (e.g. backfill mispredictions).
using PluginCounters = std::vector<std::pair<std::string, double>>;

class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual std::string_view Name() const = 0;
  // Appends this plugin's counters, names prefixed by the plugin's name.
  virtual void Counters(PluginCounters& out) const {}
};

class QueueSortPlugin : public virtual Plugin {
 public:
  virtual bool Less(const QueuedJob& a, const QueuedJob& b) const = 0;
  // A dynamic order depends on more than the jobs (queue usage, age): the
  // scheduler calls Prepare and re-sorts the queue at the start of each pass.
  virtual bool Dynamic() const { return false; }
  virtual void Prepare(const tenancy::Ledger& ledger, TimeUs now) {}
};

class AdmitPlugin : public virtual Plugin {
 public:
  virtual Verdict Admit(const job::JobSpec& job, const state::ClusterState& state, TimeUs now) = 0;
  // The job started or left; release what Admit charged.
  virtual void OnStart(const job::JobSpec& job) {}
  virtual void OnFinish(const job::JobSpec& job) {}
  // A pass begins (before any Admit of the pass).
  virtual void BeginPass(const SchedulerView& view) {}
  // A job of the pass could not start (after any preemption was tried).
  virtual void OnBlocked(const job::JobSpec& job, const Verdict& verdict, const SchedulerView& view) {}
  // Whether OnBlocked may still change what the plugin keeps in this pass
  // (a reservation for the next blocked job): a preempting profile's pass
  // then does not stop early, so that every blocked job is still reported.
  virtual bool ObservesBlocked() const { return false; }
  // A run ended at `end` (finished, failed, cancelled or preempted: `completed`
  // is true only for success), having started at `start`.
  virtual void OnRunEnded(const job::JobSpec& job, TimeUs start, TimeUs end, bool completed) {}
};

// What a plan plugin says about a job.
struct PlanOutcome {
  enum class Kind { kNoOpinion, kPlanned, kRejected };
  Kind kind = Kind::kNoOpinion;
  std::vector<state::Allocation> allocs;  // kPlanned: one per task placed, by task index
  std::vector<int32_t> task_index;        // kPlanned: the task index of each allocation
  Verdict verdict;                        // kRejected: why
  std::string note;                       // kPlanned: e.g. "within leaf g0-leaf-3"
};

class PlanPlugin : public virtual Plugin {
 public:
  // ctx.task_index and ctx.group are 0. Pure: must not change state.
  virtual PlanOutcome Plan(const CycleContext& ctx) = 0;
};

// What a filter's node rule is to the victim search (FilterPlugin::NodeRule).
enum class NodeRuleKind : uint8_t {
  kNone,         // none: the filter says nothing beyond Filter
  kLimit,        // the job's own limits (a service's spread): the nodes at a
                 // limit are left out of its search, nothing else changes
  kReservation,  // capacity held for some jobs (services' reserved nodes): a
                 // job whose search it confines reclaims there
                 // (PreemptContext::confined)
};

class FilterPlugin : public virtual Plugin {
 public:
  virtual bool Filter(const CycleContext& ctx, const TaskRequest& req, NodeId node) const = 0;
  // Why nodes fail this filter ("insufficient GPU"), for verdicts.
  virtual std::string_view FailReason() const { return Name(); }
  // The victim search's extension point. A filter with a rule that no
  // eviction the search may choose can change (a node reserved for others, a
  // node holding as many replicas of the job's service as it may) says which
  // kind, and marks for a blocked job the nodes it rules out whatever is
  // evicted there: preemption then looks for room only on the other nodes.
  // The scheduler asks RulesOut and Avoids before each search, with the
  // state and the running jobs as the search sees them (`view`) and `out`
  // sized to the cluster's nodes, all 0; the filter sets 1s only. RulesOut
  // returns whether its rule applies to the job (false: it marked nothing
  // and the job's search does not count it); it must agree with Filter: a
  // node it rules out fails Filter for the job whatever is evicted there.
  virtual NodeRuleKind NodeRule() const { return NodeRuleKind::kNone; }
  virtual bool RulesOut(const SchedulerView& view, const job::JobSpec& job, std::span<uint8_t> out) const {
    return false;
  }
  // Nodes a job may use but should not evict for while other nodes would do
  // (a service replica off its reservation): preemption looks for room
  // without them first, and with them only when that finds none. Asked only
  // of filters with a reservation rule; returns whether it marked any node.
  virtual bool Avoids(const SchedulerView& view, const job::JobSpec& job, std::span<uint8_t> out) const {
    return false;
  }
  // Optional, for the scheduler's fast paths: true promises that Filter
  // passes every node for this task of ctx.job whatever the state (e.g. the
  // spread filter for a job that is not a replica with a limit). The
  // scheduler then decides the task as if the filter were not in the
  // profile (it never fails, so its reject count stays 0).
  virtual bool PassesEveryNode(const CycleContext& ctx, const TaskRequest& req) const { return false; }
  // Optional: true promises that for this task of ctx.job the verdict on a
  // node depends only on its GPU type (e.g. the entitle filter), so one node
  // of a type answers for all (Scheduler::PlaceByType asks).
  virtual bool FiltersByType(const CycleContext& ctx, const TaskRequest& req) const { return false; }
};

class CandidatePlugin : public virtual Plugin {
 public:
  // Appends to `out` the nodes worth scoring, best first. Must be
  // deterministic. Leaving `out` empty means "no opinion: scan every node".
  virtual void Candidates(const CycleContext& ctx, const TaskRequest& req, std::vector<NodeId>& out) const = 0;
};

class ScorePlugin : public virtual Plugin {
 public:
  virtual int64_t Score(const CycleContext& ctx, const TaskRequest& req, NodeId node) const = 0;
  // Adjusts the scores of all feasible nodes together (e.g. min-max to 0..100).
  virtual void Normalize(const CycleContext& ctx, const TaskRequest& req, std::span<const NodeId> nodes,
                         std::span<int64_t> scores) const {}
  // Optional, for the scheduler's index search (scheduler/index_search.h):
  // an upper bound of Score(ctx, req, n) over the nodes n of `tier` that pass
  // the fit filter; nullopt = no bound (every node is scanned). A plugin that
  // bounds its scores promises that Normalize gives the highest value to the
  // nodes with the highest raw score and to no other (min-max does), so the
  // best node can be found without scoring every node.
  virtual std::optional<int64_t> ScoreBound(const CycleContext& ctx, const TaskRequest& req,
                                            const NodeTier& tier) const {
    return std::nullopt;
  }
  // Optional, for the scheduler's class score cache
  // (scheduler/class_score_cache.h): true promises that Score(ctx, req, n)
  // depends only on the request and node n's own state in ctx.state (so it
  // can change only when an event changes node n), not on the job, the task
  // index, the random generator, the clock or other nodes, and that Normalize
  // gives the highest value to the nodes with the highest raw score and to no
  // other. The scheduler then keeps every node's score per task request and
  // rescores only the nodes that changed.
  virtual bool NodeLocal() const { return false; }
  // Optional, for the class score cache too: true promises that Score is 0
  // on every node and that Normalize, given m feasible nodes in node order,
  // draws ctx.rng.Uniform(m) once and gives 100 to that node and 0 to every
  // other (a uniformly random feasible node; with one feasible node the
  // scheduler calls no Normalize). The cache keeps which nodes pass the
  // filters per task request, so the draw costs O(log N), not a scan.
  virtual bool UniformPick() const { return false; }
  // Optional: true promises that Score is the same on every node for this
  // task of ctx.job and that Normalize then gives every node the same value
  // (e.g. the entitle score without a reachable entitlement), so the plugin
  // cannot change the choice. The scheduler then decides the task with the
  // other score plugins alone, on their fast paths.
  virtual bool Neutral(const CycleContext& ctx, const TaskRequest& req) const { return false; }
  // Optional, for the index search's lowest score (IndexSearch::FindLowest):
  // a lower bound of Score(ctx, req, n) over the nodes n of `tier` that pass
  // the fit filter; nullopt = none.
  virtual std::optional<int64_t> ScoreFloor(const CycleContext& ctx, const TaskRequest& req,
                                            const NodeTier& tier) const {
    return std::nullopt;
  }
  // Optional: true promises that Normalize maps each score through one
  // non-decreasing function fixed by the least and the greatest score of the
  // span (min-max to 0..100 does), whatever the nodes. The scheduler may then
  // normalize a few representative scores instead of every node's.
  virtual bool NormalizesByRange() const { return false; }
  // Optional: true promises that for this task of ctx.job the score of a node
  // depends only on its GPU type (every node of a type scores the same, e.g.
  // the entitle score: the queue's headroom on the type). With one other,
  // bounded score, the scheduler then finds the best node of each type from
  // the indexes and compares the types (Scheduler::PlaceByType).
  virtual bool ScoresByType(const CycleContext& ctx, const TaskRequest& req) const { return false; }
  // Which GPUs on `node` (a bitmask of node-local indexes); nullopt = default.
  virtual std::optional<uint64_t> SelectGpus(const CycleContext& ctx, const TaskRequest& req, NodeId node) const {
    return std::nullopt;
  }
};

class ReservePlugin : public virtual Plugin {
 public:
  virtual Verdict Reserve(const CycleContext& ctx, const state::Allocation& alloc) = 0;
  virtual void Unreserve(const CycleContext& ctx, const state::Allocation& alloc) = 0;
};

class PermitPlugin : public virtual Plugin {
 public:
  // `placed[g]` = tasks placed in group g. Reject to roll the gang back.
  virtual Verdict Permit(const job::JobSpec& job, std::span<const int32_t> placed_per_group) = 0;
};

// A proposal to free room for a job: the running jobs to evict (whole gangs).
struct PreemptionPlan {
  std::vector<JobId> victims;
  std::string reason;      // e.g. "priority 10 > 0: 2 jobs in leaf l3, 12.5 GPU-h lost"
  double lost_gpu_seconds = 0;  // GPUs x time since their last checkpoint, summed
  // Elastic victims may give up workers (down to their minimum) instead of
  // being evicted, as far as that lets the job fit (Berth's victim searches
  // say yes; order-based policies modelled on a paper evict whole jobs).
  bool shrink_elastic = false;
};

// The job that could not be placed, with the scheduler around it.
struct PreemptContext {
  const job::JobSpec& job;
  int32_t queue = -1;        // its leaf queue
  const Verdict& verdict;    // why it could not be placed
  const SchedulerView& view;
  JobId preempted_by;        // the job whose preemption evicted it last (invalid: none)
  QueuedJob queued;          // the job as the queue order sees it (attained service, work done)
  // Per node id, 1 where a filter rules the job out whatever is evicted
  // (FilterPlugin::RulesOut; in a first try, the nodes it avoids too); empty:
  // no node is ruled out.
  std::span<const uint8_t> ruled_out = {};
  // A reservation rule (NodeRuleKind::kReservation) marks some of those nodes
  // in this try: the job's search is confined to capacity held for it. (The
  // nodes of limit rules alone leave it false.)
  bool confined = false;
};

// The pending queue in brief, for PostFilterPlugin::NoPlanForAny: how many
// jobs wait in each leaf queue (by queue id; ids past the end hold none), the
// highest priority among them, and how many of them are service replicas
// (JobSpec::service or replica_of set).
struct PendingSummary {
  std::span<const int32_t> per_queue;
  int32_t max_priority = 0;
  int64_t replicas = 0;
};

class PostFilterPlugin : public virtual Plugin {
 public:
  // Victims whose eviction lets the job fit at once, or nullopt. Pure.
  virtual std::optional<PreemptionPlan> PostFilter(const PreemptContext& ctx) = 0;
  // A plugin that shields running jobs for a time (a minimum runtime before
  // eviction) gives the earliest time after view.now at which a running job
  // leaves that shield (it may then be a victim), or -1 when none will.
  // Drivers run a pass then (Scheduler::NextGuardExpiry).
  virtual TimeUs NextGuardExpiry(const SchedulerView& view) const { return -1; }
  // When PostFilter proposed nothing: why not, for the job's "why" ("" when
  // there is nothing to add). Called only after a PostFilter without a plan.
  // The text stays valid until the plugin's next call (it may be one kept
  // for many jobs: no copy per blocked job).
  virtual std::string_view WhyNoPlan(const PreemptContext& ctx) const { return {}; }
  // A promise about every pending job of `pending` in this view: true only
  // when PostFilter would return nullopt for each of them and WhyNoPlan ""
  // (so trying them changes no verdict). The scheduler then skips their
  // preemption tries, and a pass stops once nothing fits the free GPUs
  // either. False makes no promise (the default). Pure, but may keep what
  // it computed for the view's epoch. A summary stands for every job of a
  // queue it counts whose priority is at most max_priority (a replica only
  // when it counts some): the scheduler also asks it for one queue's jobs,
  // or one job, with the pass's highest priority or the job's own.
  virtual bool NoPlanForAny(const SchedulerView& view, const PendingSummary& pending) { return false; }
};

class BindPlugin : public virtual Plugin {
 public:
  virtual Status Bind(const job::JobSpec& job, std::span<const TaskPlacement> placements) = 0;
};

// An elastic job as a resize plugin sees it at a round.
struct ElasticJob {
  const job::JobSpec* spec = nullptr;  // its current size is spec->groups[0].count when running
  bool running = false;
  int32_t workers = 0;   // held now (0 when pending)
  int32_t nodes = 0;     // distinct nodes it holds
  int32_t batch = 0;     // its global batch size now
  double progress = 0;   // work done, in the driver's units (goodput models: base-batch iterations)
  TimeUs submit_time = 0;
  int32_t resizes = 0;   // changes of allocation so far
};

// What a round decides for one job: `workers` (0 = hold no GPUs: stop it or
// leave it pending) and the batch to run with (0 = keep).
struct SizeTarget {
  JobId job;
  int32_t workers = 0;
  int32_t batch = 0;
};

struct ResizeContext {
  const SchedulerView& view;
  std::span<const ElasticJob> jobs;  // by job id
  int64_t total_gpus = 0;            // whole GPUs of up nodes
  int32_t gpus_per_node = 0;         // the widest node
};

class ResizePlugin : public virtual Plugin {
 public:
  virtual TimeUs RoundInterval() const = 0;
  // One target per job of ctx.jobs that should change or start; jobs not
  // named keep what they have. Deterministic.
  virtual std::vector<SizeTarget> Round(const ResizeContext& ctx) = 0;
};

// Configuration of one plugin instance ("weight" is read by the framework for
// score plugins; the rest is the plugin's).
using PluginArgs = std::map<std::string, std::string>;

// What a plugin may read while it is built, besides its args (the analogue of
// kube-scheduler's framework handle): the cluster and the workload the driver
// knows before the run starts (the FGD protocol's pod list; empty when jobs
// are only known as they arrive, as in a live service). Borrowed: valid while
// the factory runs; a plugin keeps what it derives, not these pointers.
// Plugins read the workload through its facts (FactsOf(ctx), workload_facts.h),
// which a driver that streams its trace supplies without the jobs.
//
//   PluginContext ctx{&cluster, trace.jobs};
//   Framework::Create(profile, registry, ctx);
struct PluginContext {
  const cluster::Cluster* cluster = nullptr;
  std::span<const job::JobSpec> workload;
  // Goodput models of the workload's applications (pollux traces), or null.
  const elastic::GoodputCatalog* goodput = nullptr;
  // The workload's facts gathered by the driver (a streamed trace's first
  // read), or null: then FactsOf computes them from `workload`.
  std::shared_ptr<const WorkloadFacts> facts;
};

}  // namespace berth::framework
