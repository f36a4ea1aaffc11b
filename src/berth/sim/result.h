// The outcome of one simulated run of one policy: the figures the JSON and
// HTML reports print, and the series they plot. Filled by the FGD-protocol
// and replay drivers; read by the report writers.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace berth::sim {

struct Point {
  double x = 0;
  double y = 0;
};

struct Distribution {
  int64_t count = 0;
  double mean = 0, p50 = 0, p95 = 0, p99 = 0, max = 0;
};
// Summary of a sample (nearest-rank percentiles). Empty sample: all zero.
Distribution Summarize(std::vector<double> values);

struct PlacementRow {
  int64_t index = 0;
  std::string pod;
  std::string node;  // "FAILED" when it fit nowhere
};

// One tenant's figures in a replay (jobs grouped by JobSpec::tenant, after
// --tenants-from). Definitions:
//   gpu_share        GPU-time its jobs held (all runs, to the end of the run)
//                    / (cluster GPUs x makespan): the time-mean share received.
//   guarantee_share  its leaf queue's guaranteed GPUs (all-types quota, else
//                    the sum of its per-type quotas) / cluster GPUs; a leaf
//                    shared by several tenants counts for each.
//   fair_gpus        GPUs the tenant would own alone: its guarantee, or the
//                    cluster's GPUs / number of tenants when it has none.
//   rho_s            finish-time fairness (Themis) per finished job: JCT /
//                    isolated JCT, isolated = max(duration, 1 s) x max(1,
//                    job GPUs / fair_gpus): the job alone on its tenant's
//                    fair share (stretched when it needs more GPUs than that).
//   preemptions, gpu_hours_lost  evictions of its jobs and the GPU-hours they
//                    lost (GPUs x time since the last checkpoint).
struct TenantResult {
  std::string tenant;
  std::string queue;  // its leaf queue
  int64_t jobs = 0;           // in the trace
  int64_t jobs_finished = 0;  // succeeded
  Distribution jct_s;
  Distribution queue_delay_s;
  double gpu_share = 0;
  double guarantee_share = 0;  // of the ledger's capacity, in the queue tree's unit
  double fair_gpus = 0;
  // With a reference type (queue file `reference:`, or `unit: normalized`):
  // the share of the cluster's reference-GPU capacity received (reference
  // GPU-seconds / (capacity x span)) and its ratio to guarantee_share
  // (Themis' rho on shares: 1 = received its entitlement). -1: no reference.
  double normalized_share = -1;
  double normalized_entitlement_ratio = -1;
  // With a reachable entitlement (queue file `entitlement: reachable`): the
  // time-mean of its leaf queue's entitled amount / the ledger's capacity
  // (both in the tree's unit), and the share received in that unit
  // (normalized_share with `unit: normalized`, else gpu_share) over it. -1: flat.
  double entitled_share = -1;
  double entitled_ratio = -1;
  Distribution rho;
  int64_t preemptions = 0;
  double gpu_hours_lost = 0;
};

// One queue with a budget (docs/queues.md "Budgets"): its budget and what it
// spent (in `unit`: GPU-hours, reference-GPU-hours or money), and the jobs of
// its subtree: starts by capacity class, evictions by class, and how many
// jobs waited because the budget was spent.
struct BudgetResult {
  std::string queue;
  std::string unit;
  std::string period;
  std::string when_spent;
  double amount = 0;        // per period
  double spent_total = 0;   // over the run
  double spent_period = 0;  // in the period (window) holding the run's end
  bool exhausted_at_end = false;
  int64_t starts = 0, best_effort_starts = 0, over_budget_starts = 0;
  int64_t evictions = 0, best_effort_evictions = 0;
  int64_t jobs_waited_for_budget = 0;
};

// Replay with workflows (docs/workflows.md): how many there were, how they
// ended, and completion time (last stage's end - submit) over those that ended.
struct WorkflowFigures {
  int64_t total = 0, succeeded = 0, failed = 0, unfinished = 0;
  Distribution completion_s;
};

struct PolicyResult {
  std::string policy;
  std::string mode;  // "fgd" or "replay"
  uint64_t seed = 0;
  double load = 0;   // fgd mode: target load (1.3)

  int64_t jobs_total = 0;
  int64_t jobs_placed = 0;
  int64_t jobs_failed = 0;       // dropped (fgd) or failed
  int64_t jobs_never_fit = 0;    // unresolvable: no node could ever hold them
  int64_t jobs_unfinished = 0;   // replay: still pending or running at the end
  int64_t jobs_stretched = 0;    // replay: starts whose runtime the placement stretched

  int64_t capacity_milli_gpu = 0;
  int64_t allocated_milli_gpu = 0;  // at the end
  double gpu_allocation_ratio = 0;  // allocated / capacity at the end (fgd) or mean over time (replay)
  double fragmentation_ratio = -1;  // FGD's frag / idle at the end (-1: not computed)
  double fragmented_gpu_share = -1; // FGD's frag / capacity at the end
  double utilization = 0;           // GPU-time used / (capacity x makespan), replay

  Distribution jct_s;          // job completion time (finish - submit)
  Distribution queue_delay_s;  // first start - submit
  // Replay: all the time a finished job spent pending, its waits after
  // evictions included: JCT - its GPU-time held / its GPUs.
  Distribution pending_s;
  double makespan_s = 0;
  WorkflowFigures workflows;  // replay; total 0 without workflows

  std::string decision_log_hash;
  int64_t decisions = 0;
  double wall_seconds = 0;
  // Replay: scheduling passes run, their wall time (mean and longest), and the
  // most jobs pending at the start of a pass.
  int64_t passes = 0;
  double pass_mean_ms = 0;
  double pass_max_ms = 0;
  int64_t pending_max = 0;

  // Series for plots.
  std::vector<Point> allocation_over_time;  // x: hours (replay) or arrived % (fgd); y: allocation %
  std::vector<Point> queue_length_over_time;  // x: hours; y: pending jobs
  std::vector<double> jcts_s;  // finished jobs' JCTs, for the CDF (replay: at most 2,000 evenly spaced order statistics)

  std::vector<PlacementRow> placements;  // fgd mode: one row per arrival

  // Replay: per tenant, by tenant name.
  std::vector<TenantResult> tenants;
  std::vector<BudgetResult> budgets;  // queues with a budget (replay), by name

  // The plugins' own figures (Plugin::Counters, e.g. "backfill.reservations"),
  // by name; replay sums them over partitions (a name with "_max": the largest).
  std::vector<std::pair<std::string, double>> plugin_counters;

  // Preemption (replay): evictions, and the work they lost in GPU-hours (per
  // eviction: the victim's GPUs x the time since its last checkpoint).
  int64_t preemptions = 0;
  double gpu_hours_lost = 0;

  // Failures (replay with --failures; docs/failures.md). `failures_on` says
  // whether a failure model ran (the JSON then carries these keys).
  bool failures_on = false;
  std::string repair_mode;  // requeue | in-place
  std::string spare_mode;   // none | leaf | spine
  int64_t spare_nodes = 0;  // set aside at the start
  // useful GPU-hours (GPUs x time making progress that was kept) / allocated
  // GPU-hours (GPUs held, whatever they did).
  double goodput = 0;
  double useful_gpu_hours = 0;
  double allocated_gpu_hours = 0;
  // Effective training time (Llama 3's definition): time making progress /
  // wall time from first start to finish (or the end of the run), per job of
  // at least 2 tasks or 1,024 GPUs, and the mean over jobs of >= 1,024 GPUs
  // (-1 when there are none).
  struct JobEtt {
    std::string job;
    int64_t gpus = 0;
    double ett = 0;
    int32_t restarts = 0;
    int32_t repairs = 0;
  };
  std::vector<JobEtt> effective_training_time;
  double effective_training_time_large = -1;
  std::vector<std::pair<std::string, int64_t>> failures;       // faults by cause
  std::vector<std::pair<std::string, int64_t>> interruptions;  // jobs stopped, by cause
  int64_t jobs_lost = 0;    // submitted jobs neither finished, running nor pending at the end
  int64_t restarts = 0;     // whole-gang restarts from a checkpoint
  int64_t repairs = 0;      // gangs repaired in place
  int64_t repair_fallbacks = 0;
  int64_t spares_used = 0;
  // Spares lent to best-effort work (--lend-spares): runs started on a spare,
  // borrowers evicted at once for a repair, the spares' GPU-hours set aside,
  // the GPU-hours borrowers held of them, and lent / set aside (0 when none).
  bool lend_spares = false;
  int64_t spare_loans = 0;
  int64_t spare_loan_evictions = 0;
  double spare_gpu_hours = 0;
  double spare_lent_gpu_hours = 0;
  double spare_utilization = 0;
  int64_t quarantines = 0;
  int64_t drained_by_deadline = 0;
  double gpu_hours_lost_failures = 0;   // GPUs x work since the last checkpoint at each failure
  double gpu_hours_lost_recovery = 0;   // GPUs x restart / repair time
};

}  // namespace berth::sim
