// What every plugin sees in one scheduling cycle: the task being placed, the
// state as it stands (including the tasks of this gang already reserved), the
// cycle's random generator and tie-break ranking, and the clock.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "berth/cluster/gpu_type.h"
#include "berth/common/ids.h"
#include "berth/common/quantity.h"
#include "berth/common/rng.h"
#include "berth/job/job.h"
#include "berth/state/cluster_state.h"
#include "berth/tenancy/ledger.h"

namespace berth::framework {

// One task's request, flattened for the hot path.
struct TaskRequest {
  int32_t gpus = 0;
  MilliGpu milli_per_gpu = kMilliPerGpu;
  MilliCpu cpu_milli = 0;
  MiB memory_mib = 0;
  cluster::GpuTypeSet gpu_types;  // empty = any
  bool gpu_types_unknown = false; // asked only for types the cluster lacks
  MiB gpu_memory_mib = 0;         // on each GPU (0: not stated)

  static TaskRequest FromGroup(const job::TaskGroup& g) {
    return {g.gpus, g.milli_per_gpu, g.cpu_milli, g.memory_mib, g.gpu_types, g.gpu_types_unknown,
            g.gpus > 0 ? g.gpu_memory_mib : 0};
  }
  bool is_sharing() const { return gpus == 1 && milli_per_gpu < kMilliPerGpu; }
  MilliGpu total_milli() const { return gpus * milli_per_gpu; }
};

// A set of up nodes of one GPU type taken from the state's indexes, as a score
// plugin sees it when it bounds its scores (ScorePlugin::ScoreBound). Every
// node of the set that passes the fit filter for the task has
//   full_free_lo <= full_free_gpus <= full_free_hi,
//   node_free_lo <= node_free_milli <= node_free_hi,
//   cpu_lo <= free_cpu <= cpu_hi,
// and (fit) free_cpu >= the task's CPU, free milli-GPU >= the task's.
struct NodeTier {
  GpuTypeId type;
  int32_t full_free_lo = 0;
  int32_t full_free_hi = 0;
  MilliGpu node_free_lo = 0;
  MilliGpu node_free_hi = 0;
  MilliCpu cpu_lo = 0;
  MilliCpu cpu_hi = 0;
};

// A job waiting in the queue, as queue-sort plugins see it.
struct QueuedJob {
  const job::JobSpec* spec = nullptr;
  int64_t seq = 0;          // submission order, the final tie-break
  TimeUs enqueue_time = 0;  // when it (re)entered the queue
  double attained_gpu_seconds = 0;  // service received so far (LAS)
  int32_t queue = -1;       // its leaf queue in the ledger
  TimeUs work_done = 0;     // runtime saved by checkpoints before it was preempted
  int32_t preemptions = 0;  // times it was evicted
};

// One task's final placement.
struct TaskPlacement {
  TaskKey task;
  state::Allocation alloc;
};

// The capacity class of a run (docs/queues.md "Budgets"): within its queue's
// guarantee, or best effort: beyond its guarantee (borrowed), or started
// while its queue's budget was spent (on idle capacity only), or declared so by
// the job (`best_effort`: it yields within the best-effort deadline,
// docs/services.md). With budgets in the queue tree, preemption takes
// best-effort runs first.
enum class RunClass : uint8_t { kGuaranteed, kBeyondGuarantee, kOverBudget, kDeclared };
// "guaranteed" or "best-effort".
inline const char* RunClassName(RunClass c) { return c == RunClass::kGuaranteed ? "guaranteed" : "best-effort"; }
// "", "beyond guarantee", "over budget" or "declared best effort".
inline const char* RunClassReason(RunClass c) {
  return c == RunClass::kBeyondGuarantee ? "beyond guarantee"
         : c == RunClass::kOverBudget    ? "over budget"
         : c == RunClass::kDeclared      ? "declared best effort"
                                         : "";
}

// A running job, as preemption and backfill plugins see it. Pointers are the
// scheduler's and stay valid while the job runs.
struct RunningJob {
  const job::JobSpec* spec = nullptr;
  std::span<const TaskPlacement> placements;
  int32_t queue = -1;
  // Copies of spec->priority, spec->checkpoint_interval, spec->id and
  // spec->best_effort, so that scans over every running job (preemption)
  // read this array only. (Ordered so that the record stays 112 bytes.)
  int32_t priority = 0;
  int64_t seq = 0;
  TimeUs start_time = 0;  // this run's start
  TimeUs run_start = 0;   // start_time + startup delay (grace, restore): work begins here
  TimeUs work_done = 0;   // runtime saved by checkpoints before this run
  int64_t milli_gpu = 0;  // what it holds
  int64_t charge = 0;     // what its queue is charged for it (the ledger's unit, all GPU types)
  TimeUs checkpoint_interval = -1;
  double attained_gpu_seconds = 0;  // service of its earlier runs (LAS); this run adds milli_gpu x (now - start_time)
  JobId id;
  int32_t preemptions = 0;
  RunClass run_class = RunClass::kGuaranteed;
  bool best_effort = false;
  // Some task holds a GPU share (milli_per_gpu below a whole GPU); false
  // only when every GPU it holds is whole.
  bool shares = false;

  // The last checkpoint of this run at `now` (run_start when none yet, or
  // when the job never checkpoints).
  TimeUs LastCheckpoint(TimeUs now) const {
    const TimeUs interval = checkpoint_interval;
    if (interval <= 0 || now <= run_start) return run_start;
    return run_start + (now - run_start) / interval * interval;
  }
  // GPU-seconds lost if evicted at `now`: GPUs x time since the last checkpoint
  // (0 while the run is still starting: no work done yet).
  double LostGpuSeconds(TimeUs now) const {
    if (now <= run_start) return 0;
    return static_cast<double>(milli_gpu) / kMilliPerGpu * UsToSeconds(now - LastCheckpoint(now));
  }
};

static_assert(sizeof(void*) != 8 || sizeof(RunningJob) == 112, "preemption scans stream this array: keep it small");

// Finds a running job by id: for plugins that start from the state's tasks on
// a node (ClusterState::tasks_on) and need the job's RunningJob.
class RunningLookup {
 public:
  virtual ~RunningLookup() = default;
  // The job's index in SchedulerView::running, or -1 when it is not running.
  virtual int32_t SlotOf(JobId id) const = 0;
};

// What plugins that look beyond one job see of the scheduler at a decision:
// the state, the queues' ledger, the running jobs (in start order) and the clock.
struct SchedulerView {
  const state::ClusterState& state;
  const tenancy::Ledger& ledger;
  std::span<const RunningJob> running;
  TimeUs now = 0;
  std::span<const int32_t> node_rank;
  // Changes whenever the state, the ledger or the running jobs may have
  // changed (the scheduler counts its changes): two views with the same
  // epoch, clock and objects see the same scheduler. 0: unknown, so plugins
  // keep nothing from one call to the next (tests, oracles).
  uint64_t epoch = 0;
  // Running jobs by id (null: none given, so plugins scan `running`).
  const RunningLookup* lookup = nullptr;
};

struct CycleContext {
  const state::ClusterState& state;
  const job::JobSpec& job;
  int32_t task_index = 0;  // within the job
  int32_t group = 0;
  Rng& rng;
  TimeUs now = 0;
  // Tie-break rank per node id (lower wins); empty = by node id.
  std::span<const int32_t> node_rank;
  const tenancy::Ledger* ledger = nullptr;  // the queues (quota plugins)
  int32_t queue = -1;                       // the job's leaf queue

  int32_t RankOf(NodeId n) const { return node_rank.empty() ? n.value() : node_rank[n.value()]; }
};

}  // namespace berth::framework
