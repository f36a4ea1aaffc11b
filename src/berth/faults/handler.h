// The fault handler: applies faults to schedulers, the same way for the
// replay and for scenario tests. It decides which running jobs a fault
// stops, repairs or requeues them, takes the failed parts out of the cluster
// state (through the scheduler, so every change goes through Apply), keeps
// hot spares per domain, and quarantines nodes that fail repeatedly.
//
//   FaultHandler h(cluster, options, /*part_of_node=*/{});
//   h.Init(scheds);                       // cordons the spares
//   int32_t i = h.Add(fault);
//   StatusOr<StepOutcome> o = h.Step(i, kBegin, scheds);  // then each wakeup it returns
//
// Phases of a fault: kBegin (it happens; maintenance: the drain starts and the
// domain is cordoned), kDeadline (maintenance: jobs still there checkpoint and
// move), kEnd (repaired: its parts come back), kQuarantineEnd (a quarantined
// node comes back).
//
// Which jobs a fault stops: gpu and task faults the jobs holding that GPU;
// node faults every job on the node; link, leaf and spine faults the jobs
// with a task there that span more than one node (single-node work keeps
// running, but nothing new starts there until the part is back); cluster
// faults every job there; maintenance every job still there at the deadline.
//
// What happens to a stopped job: with RepairMode::kRequeue (the default) the
// whole gang is requeued from its last checkpoint and its next run spends the
// restart cost (the job's restart_cost, else FaultOptions::restart_cost). With
// kInPlace, a gang of two or more tasks keeps its GPUs: each stopped task
// (same rank, same task key) moves to a replacement found in this order:
// the same node's other GPUs (gpu and task faults), a spare of its domain, a
// free node of its leaf, a spare or free node of its spine, its cluster - never
// outside the narrowest domain that holds the gang, and inside the task's own
// NVLink domain when NVLink domains span nodes (the tensor-parallel group
// stays on NVLink). The gang rolls back to its last checkpoint and works again
// after the repair cost. When a task finds no replacement, the gang is
// requeued instead.
//
// Quarantine: a node with `quarantine_after` node-level faults (gpu, node,
// link) within `quarantine_window` stays out after its repair for
// quarantine_base x 2^(k-1), its k-th quarantine.
//
// Failure history: every gpu, node and link fault (and a leaf or spine fault,
// spread over the nodes under it) is recorded into the plugins of each
// scheduler's profile that learn from failures (plugins::FailureAware, e.g.
// the "topology-reliable" plan), found at Init.
//
// Lending (FaultOptions::lend_spares): a spare stays cordoned for the
// scheduler, but Lend() starts pending single-task best-effort jobs on free
// spares (Scheduler::Adopt, through the same Apply path). When a repair needs
// a lent spare, its borrowers are evicted at once (Scheduler::Preempt: they
// lose the work since their last checkpoint and are requeued) and the spare
// goes to the repair. The driver calls Advance(now) before Step and Lend, so
// that the spare figures (spare and lent GPU-seconds) follow its clock.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/faults/failure_file.h"
#include "berth/faults/fault.h"
#include "berth/plugins/topology/failure_history.h"
#include "berth/scheduler/scheduler.h"

namespace berth::faults {

enum class RepairMode : uint8_t { kRequeue, kInPlace };
enum class SpareMode : uint8_t { kNone, kLeaf, kSpine };
std::optional<RepairMode> ParseRepairMode(std::string_view s);
const char* RepairModeName(RepairMode m);
// "none", "leaf", "spine", or "leaf:N" / "spine:N" (N spares per domain).
struct SpareSetting {
  SpareMode mode = SpareMode::kNone;
  int32_t per_domain = -1;  // -1: sized from the failure rates (spares.h)
};
StatusOr<SpareSetting> ParseSpareSetting(std::string_view s);
const char* SpareModeName(SpareMode m);

// The allocation `like` (a task's placement) would take on node n, on GPUs
// free in `st` outside `forbidden_gpus`: the same GPU type, its CPU, memory
// and GPU count (whole GPUs, or its share of each GPU), the lowest free GPU
// positions first; nullopt when it does not fit. The fault handler's
// replacements and the service's in-place repairs both use it.
std::optional<state::Allocation> FitTaskOn(const cluster::Cluster& cluster, const state::ClusterState& st,
                                           const state::Allocation& like, NodeId n, uint64_t forbidden_gpus);

// The narrowest topology level that holds every placement of a gang
// (nullopt: all on one node).
std::optional<cluster::Level> SpannedLevel(const cluster::Cluster& cluster,
                                           std::span<const framework::TaskPlacement> placements);

struct FaultOptions {
  RepairMode repair = RepairMode::kRequeue;
  SpareSetting spares;
  TimeUs restart_cost = 0;  // a whole-gang restart (jobs without restart_cost)
  TimeUs repair_cost = 0;   // an in-place repair (restore of the replaced rank)
  std::vector<FailureRate> rates;  // for sizing spares
  int64_t largest_gang_gpus = 0;   // for sizing spares: the gang a missing spare costs
  TimeUs largest_gang_restart_cost = -1;  // its restart cost (-1: restart_cost)
  // Spares lent to best-effort work: single-task best-effort jobs
  // (JobSpec::best_effort) whose declared runtime limit is at most
  // lend_max_runtime (-1: any, with a limit or not).
  bool lend_spares = false;
  TimeUs lend_max_runtime = -1;
  int32_t quarantine_after = 3;
  TimeUs quarantine_window = 7 * 24 * 3600 * kUsPerSecond;
  TimeUs quarantine_base = 24 * 3600 * kUsPerSecond;

  Status Validate() const;
};

enum FaultPhase : int32_t { kBegin = 0, kDeadline = 1, kEnd = 2, kQuarantineEnd = 3 };

struct Wakeup {
  TimeUs at = 0;
  int32_t fault = 0;
  int32_t phase = 0;
};

struct StepOutcome {
  std::vector<Wakeup> wakeups;  // later phases to run
  // Jobs repaired in place (their run changed: a new completion is due), by
  // partition, and partitions whose queue changed (requeued jobs, parts back).
  std::vector<std::pair<int32_t, JobId>> repaired;
  std::vector<int32_t> touched;
};

struct FaultCounters {
  std::map<std::string, int64_t> faults;         // by cause
  std::map<std::string, int64_t> interruptions;  // jobs stopped, by cause
  int64_t restarts = 0;          // whole-gang requeues
  int64_t repairs = 0;           // gangs repaired in place
  int64_t repair_fallbacks = 0;  // in-place wanted, no room: requeued
  int64_t spares_used = 0;
  int64_t spare_nodes = 0;       // spares set aside at the start
  int64_t quarantines = 0;
  int64_t drained_by_deadline = 0;  // maintenance: jobs moved at the deadline
  int64_t spare_loans = 0;           // best-effort runs started on a spare
  int64_t spare_loan_evictions = 0;  // borrowers evicted at once for a repair
  double spare_gpu_seconds = 0;      // GPUs of the spares x time set aside
  double lent_gpu_seconds = 0;       // GPUs x time borrowers held on spares
};

class FaultHandler {
 public:
  // part_of_node: the partition (index into the schedulers) of each node;
  // empty = every node in partition 0.
  FaultHandler(const cluster::Cluster& cluster, FaultOptions options, std::vector<int32_t> part_of_node);

  // Sets the spares aside (cordoned). Call before any job starts.
  Status Init(std::span<scheduler::Scheduler* const> scheds);
  int32_t Add(Fault f);
  const Fault& fault(int32_t i) const { return faults_[i]; }
  StatusOr<StepOutcome> Step(int32_t fault, int32_t phase, std::span<scheduler::Scheduler* const> scheds);

  // The driver's time (spare figures); never goes back.
  void Advance(TimeUs now, std::span<scheduler::Scheduler* const> scheds);
  // Lends free spares (lend_spares): each of `candidates` (partition, job), in
  // this order, that is pending, best effort, one task and within
  // lend_max_runtime starts on the first spare of its partition that holds it
  // (lowest node id). Returns the jobs started, in order.
  StatusOr<std::vector<std::pair<int32_t, JobId>>> Lend(std::span<const std::pair<int32_t, JobId>> candidates,
                                                        std::span<scheduler::Scheduler* const> scheds);
  // Closes the spare figures at the end of a run.
  void Finish(TimeUs end, std::span<scheduler::Scheduler* const> scheds);
  // Whether a best-effort job runs on this spare now.
  bool lent(NodeId n) const;

  const FaultCounters& counters() const { return counters_; }
  bool spare(NodeId n) const { return spare_[n.value()]; }
  bool quarantined(NodeId n) const { return quarantine_count_[n.value()] > 0 && held_by_quarantine_[n.value()]; }
  int32_t spare_target(DomainId d) const;
  const FaultOptions& options() const { return options_; }

 private:
  int32_t PartOf(NodeId n) const { return part_of_node_.empty() ? 0 : part_of_node_[n.value()]; }
  Status Hold(NodeId n, std::span<scheduler::Scheduler* const> scheds);
  // A node whose last hold goes may become a spare again, unless `to_work`.
  Status Unhold(NodeId n, std::span<scheduler::Scheduler* const> scheds, bool to_work = false);
  // Nodes a fault covers (its node, or its domain's range).
  std::pair<int32_t, int32_t> NodeRange(const Fault& f) const;
  // Stops (repairs or requeues) every job the fault hits now.
  Status StopJobs(const Fault& f, bool checkpoint_now, std::span<scheduler::Scheduler* const> scheds,
                  StepOutcome& out);
  // A replacement allocation for one task of a gang, or nullopt.
  std::optional<state::Allocation> FindReplacement(const scheduler::Scheduler& s, const scheduler::JobRecord& rec,
                                                   const framework::TaskPlacement& task, const Fault& f,
                                                   std::optional<cluster::Level> spanned,
                                                   std::span<scheduler::Scheduler* const> scheds);
  bool Excluded(const Fault& f, NodeId n) const;
  std::optional<state::Allocation> FitOn(const state::ClusterState& st, const state::Allocation& like, NodeId n,
                                         uint64_t forbidden_gpus) const;
  DomainId SpareDomainOf(NodeId n) const;
  void MaybeMakeSpare(NodeId n, std::span<scheduler::Scheduler* const> scheds);
  void SetSpare(NodeId n, bool on);
  // Whether `like` would fit on node n once its borrowers leave.
  bool FitsEmpty(const state::ClusterState& st, const state::Allocation& like, NodeId n) const;
  // Evicts every borrower of spare n at once (a repair needs it).
  Status EvictBorrowers(NodeId n, std::span<scheduler::Scheduler* const> scheds);
  // Closes the loans whose run ended (at its finish, else at the last time).
  void SweepLoans(std::span<scheduler::Scheduler* const> scheds, bool all, TimeUs end);
  TimeUs RestartCost(const job::JobSpec& spec) const {
    return spec.restart_cost >= 0 ? spec.restart_cost : options_.restart_cost;
  }

  const cluster::Cluster& cluster_;
  FaultOptions options_;
  std::vector<int32_t> part_of_node_;
  std::vector<Fault> faults_;
  std::vector<int32_t> holds_;      // per node: reasons it is cordoned (faults, spare, quarantine)
  std::vector<int32_t> gpu_holds_;  // per global GPU: faults holding it down
  std::vector<uint8_t> spare_;      // per node
  std::vector<int32_t> spare_count_;   // per domain (spare level): spares now
  std::vector<int32_t> spare_target_;  // per domain: N
  std::vector<std::vector<TimeUs>> recent_faults_;  // per node: node-level fault times in the window
  std::vector<int32_t> quarantine_count_;
  std::vector<uint8_t> held_by_quarantine_;
  struct Loan {
    int32_t part = 0;
    JobId job;
    NodeId node;
    TimeUs start = 0;
    int32_t gpus = 0;
  };
  std::vector<Loan> loans_;  // open loans, in start order
  TimeUs now_ = -1;
  int64_t spare_gpus_ = 0;   // GPUs of the spares now
  std::vector<std::vector<plugins::FailureAware*>> learners_;  // per scheduler
  void RecordHistory(const Fault& f);
  FaultCounters counters_;
};

}  // namespace berth::faults
