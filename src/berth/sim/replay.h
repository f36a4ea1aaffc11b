// Time-based replay: jobs arrive at their submit times, run for their trace
// durations and leave; the same scheduler::Scheduler decides who runs. The
// simulated clock is a ManualClock set to each event's time.
//
// Loop: take every event at the earliest time t (arrivals -> Submit, read
// from the trace in submit order as their time comes; completions ->
// Finish(kSucceeded)), then run Schedule() once; each started job gets a
// completion event at t + duration. Metrics are integrated between
// event times; plot series are sampled by kSample ticks on a grid that is
// coarsened (every other point dropped, interval doubled) whenever it would
// exceed max_samples points, so reports stay small however long the run.
//
// Rules:
//   - A job without a duration (duration < 0) never completes: once started it
//     holds its GPUs to the end of the run and counts as unfinished.
//   - A job that can never fit (the scheduler's Unresolvable verdict) is marked
//     Failed by the scheduler and counted in jobs_never_fit.
//   - The run ends when no arrival or completion is left; what is still
//     pending or running then is counted in jobs_unfinished.
//   - A job that ends leaves the figures the report reads (EndedJob,
//     tenant_figures.h) and the scheduler drops its record, so memory follows
//     the jobs alive (not with workflows, failures, resize rounds or jobs
//     timed by their allocation, which read records later; keep_records).
//   - JCT = finish - submit over succeeded jobs; queueing delay = first start -
//     submit over started jobs; makespan = end of the run - first submit.
//   - Per tenant (PolicyResult::tenants): the same figures over its jobs, plus
//     its GPU share received and guaranteed, finish-time fairness, preemptions
//     and GPU-hours lost (definitions in result.h). A tenant's queue and
//     guarantee are read from the ledger of the scheduler that ran its jobs.
//
// Partitions (optional, e.g. Philly's virtual clusters): with partition_level
// set, every domain at that level is an independent cluster with its own
// scheduler and queue (nodes outside it are down for that scheduler), and a
// job runs in the domain named partition_prefix + its tenant (e.g. prefix
// "vc-": tenant 6214e9 runs in domain vc-6214e9). Each partition's
// scheduler acts only at the times of its own events, so a partitioned run
// equals separate runs of each partition's jobs on that partition alone. A job
// whose tenant names no domain, or that asks for more GPUs than its domain
// has, is counted as never fit without being submitted.
//
// Failures (optional): with `failures` set, a faults::FaultHandler applies
// each fault to the partition schedulers as its time comes (kFault events,
// one per phase), and generated faults are drawn one at a time, so they never
// keep a run alive on their own. A gang repaired in place gets a new
// completion; a requeued one restarts through the normal pass. Results then
// carry goodput, effective training time, failures by cause, restarts and
// jobs lost (result.h).
//
//   ReplayOptions o;  o.seed = 42;
//   StatusOr<PolicyResult> r = RunReplay(cluster, trace, profile, registry, o);
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "berth/cluster/cluster.h"
#include "berth/faults/failure_file.h"
#include "berth/faults/handler.h"
#include "berth/framework/registry.h"
#include "berth/sim/result.h"
#include "berth/sim/runtime_model.h"
#include "berth/sim/trace.h"
#include "berth/sim/trace_stream.h"
#include "berth/tenancy/queue_tree.h"

namespace berth::sim {

struct ReplayOptions {
  uint64_t seed = 42;
  bool check_indexes = false;
  bool full_scan = false;  // SchedulerOptions::full_scan (the exactness oracle)
  bool full_sort = false;  // SchedulerOptions::full_sort (the queue order's oracle)
  bool full_preempt = false;  // SchedulerOptions::full_preempt (preemption's oracle)
  // Keep every job's scheduler record to the end of the run. Off: a job that
  // ends leaves the figures the report reads and its record is dropped
  // (Scheduler::Forget), so memory follows the jobs alive. The same results;
  // the oracle the compact path is compared with.
  bool keep_records = false;
  // Bound on the points of each plot series (at least 2).
  int32_t max_samples = 2000;
  // Independent partitions, one per domain at this level (see the file comment).
  std::optional<cluster::Level> partition_level;
  std::string partition_prefix;
  // Called with (events done, events expected) every `progress_every` events
  // and once at the end; events are arrivals and completions.
  std::function<void(int64_t, int64_t)> progress;
  int64_t progress_every = 8192;
  // Placement-dependent runtime stretch (off by default: see runtime_model.h).
  RuntimeModel runtime;
  // The queue tree every partition's scheduler charges jobs to (null: each
  // tenant gets its own unconstrained leaf), and the half-life of the decayed
  // usage that fair share reads (0: no decay).
  std::shared_ptr<const tenancy::QueueTree> queues;
  TimeUs usage_half_life = 0;
  // Normalized units of the tree (SchedulerOptions::speeds; null: GPUs).
  std::shared_ptr<const tenancy::SpeedModel> speeds;
  // Preemption: the grace evictees get and the restore cost of a resumed run
  // (SchedulerOptions::preemption_grace, restore_cost).
  TimeUs preemption_grace = 0;
  TimeUs restore_cost = 0;
  // Failures (docs/failures.md): timed faults (times from the first
  // submission) and rates for the seeded generator; null = none. The
  // handler's options: repair mode, spares, restart and repair costs.
  std::shared_ptr<const faults::FailureSpec> failures;
  faults::FaultOptions fault_options;
  // Stop this long after the first submission (-1: when no arrival or
  // completion is left); what still runs then counts as unfinished.
  TimeUs until = -1;

  Status Validate() const;
};

StatusOr<PolicyResult> RunReplay(const cluster::Cluster& cluster, const Trace& trace,
                                 const framework::Profile& profile, const framework::PluginRegistry& registry,
                                 const ReplayOptions& options);

// The same replay of a streamed trace (trace_stream.h): each job's spec is
// read from the file as its submit time comes, so the run holds the specs of
// the jobs alive, not the whole list; the same results as RunReplay on the
// trace read whole. Plugins that read the workload up front (fgd, berth-frag,
// the preemption plugins) get the facts of the first read
// (StreamedTrace::facts). Refused (an error saying why) for a trace that
// cannot stream (StreamedTrace::Streamable) or with failures.
StatusOr<PolicyResult> RunReplay(const cluster::Cluster& cluster, const StreamedTrace& trace,
                                 const framework::Profile& profile, const framework::PluginRegistry& registry,
                                 const ReplayOptions& options);

}  // namespace berth::sim
