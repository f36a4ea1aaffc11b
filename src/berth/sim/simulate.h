// `berth simulate` as a library call: options in, one result per policy out.
// The command-line front end only parses flags into SimulateOptions.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/common/quantity.h"
#include "berth/common/status.h"
#include "berth/sim/result.h"

namespace berth::sim {

struct SimulateOptions {
  std::string cluster;        // file (.yaml, .csv) or compact spec
  // How `cluster` becomes a Cluster; null = cluster::LoadCluster. The command
  // line sets kube::LoadClusterSource, which also reads Kubernetes NodeLists
  // (.json) with its --topology-label mappings.
  std::function<StatusOr<cluster::Cluster>(const std::string&)> load_cluster;
  std::string trace;          // path
  std::string trace_format;   // openb|philly|gavel|tiresias|native ("" = guess)
  std::string mode;           // fgd|replay ("" = fgd for openb, else replay)
  double load = 1.3;          // fgd mode
  uint64_t seed = 42;
  std::string arrival_order;  // fgd mode: data/fgd-reference-run pod order
  std::string node_rank;      // fgd mode: data/fgd-reference-run node ranking
  std::vector<std::string> policies;
  // Replay mode: independent partitions, one per domain at a level, each job
  // in the one named by its tenant: "LEVEL" or "LEVEL:PREFIX" (the domain is
  // named PREFIX + tenant), e.g. "leaf:vc-"; "" = none.
  std::string partition;
  // Replay mode: communication share of a step for the runtime stretch of
  // gangs that span nodes (0 = off; see runtime_model.h).
  double comm_fraction = 0;
  bool skip_bad_lines = false;
  int64_t max_jobs = -1;
  // Replay mode: read a native trace's jobs from the file as their submit
  // times come instead of holding the whole list (trace_stream.h). "auto":
  // when the trace and options allow it (a native trace sorted by submit
  // time, no workflows, elastic jobs or services, no --failures; plugins that
  // read the workload up front get the first read's facts), else from
  // memory; "on": the same, an error when it cannot; "off": always from
  // memory. The same results.
  std::string stream_trace = "auto";
  // Trace filters (philly): submission window and tenants (see ReadOptions).
  std::string window_from;
  std::string window_to;
  std::vector<std::string> tenants;
  // Replay mode: arrival rate multiplier. Submission times become
  // first + (t - first) / rate_scale (durations unchanged), so a window of the
  // trace loads a larger cluster as it loads a smaller one at rate 1.
  double rate_scale = 1;
  // Tenancy (replay mode). Which trace field becomes the tenant: "" (as the
  // reader sets it), "vc" (Philly virtual clusters: philly traces and Gavel's
  // per-VC files), "user" (the tenant field of native traces; the other
  // formats here carry no user) or "none" (one tenant for every job).
  std::string tenants_from;
  // The queue tree (YAML, docs/queues.md); "" = one leaf per tenant, each
  // guaranteed its share of the trace's GPU demand (QueueTree::FromTenantShares).
  std::string queues;
  // Half-life of the decayed usage history of fair share; -1 = the queue
  // file's half_life if it has one, else 0 (no decay).
  TimeUs half_life = -1;
  // Preemption (replay mode): the checkpoint interval of jobs whose trace
  // declares none (-1: they never checkpoint; an evicted job restarts from
  // scratch), the grace an evictee gets to checkpoint (its preemptor starts
  // that much later), the restore cost of a resumed run; and a seeded share of
  // the jobs raised to `high_priority` (a job is chosen when a hash of the seed
  // and its id falls below the share; 0 = the trace's priorities).
  TimeUs checkpoint_interval = -1;
  TimeUs preemption_grace = 0;
  TimeUs restore_cost = 0;
  // The least a job runs in a run before preemption may evict it (the
  // preemption plugins' min_runtime_s); -1 = the plugins' default (600 s).
  TimeUs min_runtime = -1;
  // Plugin arguments, "PLUGIN.KEY=VALUE" (--plugin-arg), on every policy
  // that uses the plugin (framework::ApplyPluginArgs).
  std::vector<std::string> plugin_args;
  double high_priority_share = 0;
  int32_t high_priority = 10;
  // Failures (replay mode; docs/failures.md): a failure file or a built-in
  // profile (llama3, llama3*SCALE); "" = none. Spares: none, leaf, spine,
  // leaf:N, spine:N. Repair: requeue or in-place ("" = in-place with spares,
  // else requeue). A whole-gang restart costs `restart_cost` (jobs without
  // restart_cost_s), an in-place repair `repair_cost`. `until`: stop this long
  // after the first submission (-1: when every job is done).
  std::string failures;
  std::string spares = "none";
  std::string repair;
  TimeUs restart_cost = 0;
  TimeUs repair_cost = 0;
  TimeUs until = -1;
  // Spares lent to best-effort work (docs/failures.md): "off", "on" (every
  // single-task best-effort job), or a duration D (only those whose declared
  // runtime limit is at most D). best_effort_tenants: the trace's jobs of
  // these tenants are best effort (JobSpec::best_effort).
  std::string lend_spares = "off";
  std::vector<std::string> best_effort_tenants;
  bool check_indexes = false;
  bool full_scan = false;  // SchedulerOptions::full_scan (the exactness oracle)
  bool full_sort = false;  // SchedulerOptions::full_sort (the queue order's oracle)
  bool full_preempt = false;  // SchedulerOptions::full_preempt (preemption's oracle)
  bool record_placements = false;
  // Generated workloads instead of a trace: "gavel" (Gavel's synthetic jobs,
  // round-based heterogeneity-aware simulation; --trace is then not needed).
  std::string workload;
  double rate_per_hour = 5.6;        // gavel: Poisson arrivals, jobs per hour
  int64_t jobs = 6000;               // gavel: jobs generated
  std::string measure;               // gavel: "BEGIN:END" job ids whose JCT is reported
  bool multi_gpu = false;            // gavel: draw scale factors 1/2/4/8
  bool static_trace = false;         // gavel: every job at t = 0 (makespan runs)
  bool priorities = false;           // gavel: priority weights 1 or 5
  std::string throughputs = "../shared/data/gavel/simulation_throughputs.json";
  std::string catalog = "data/accelerators.yaml";
  std::string reference_type = "H100";  // normalized units
  double round_s = 360;              // gavel: scheduling round
  std::string consolidation = "gavel";  // gavel: multi-GPU speed "gavel" (always consolidated) or "placement"
  std::string mechanism = "gavel";      // gavel: round mechanism "gavel" (Gavel's priorities) or "deficit"
  // Policies run side by side on this many threads (--threads; 0 = the
  // machine's cores, 1 = one after another). The results, reports and
  // decision-log hashes are the same for any count: each run has its own
  // scheduler, state and plugins, and reads the cluster, trace and options only.
  int threads = 0;
  // Called with (done, total) as the run advances, for a progress bar: policies
  // in fgd and gavel mode, events (arrivals and completions, all policies) in
  // replay mode. With threads > 1 it is called from the runs' threads.
  std::function<void(int64_t, int64_t)> progress;

  Status Validate() const;
  StatusOr<cluster::Cluster> LoadClusterFile() const;
};

// What produced a run, for the reports (set by the command; empty fields are
// left out of the reports).
struct RunInfo {
  std::string berth_version;  // "0.1.0"
  std::string git_commit;     // "1a2b3c4d5e6f" ("-dirty" when the sources had local changes)
  std::string build_type;     // "Release"
  std::string command_line;   // the exact command, shell-quoted: "berth simulate --cluster c.yaml ..."
  std::string cluster;        // the --cluster argument (file or compact spec)
};

struct SimulateOutput {
  std::vector<PolicyResult> results;
  RunInfo run;
  std::string cluster_summary;
  std::string trace_summary;
  std::string trace_skips;  // the read report's skipped lines by reason, with the first errors ("" if none)
  std::string trace_name;
};

StatusOr<SimulateOutput> RunSimulation(const SimulateOptions& options);

// One run per policy, `run(i)` for i in [0, n), on up to `threads` threads
// (SimulateOptions::threads: 0 = the machine's cores); the results appended to
// `out` in the order of the policies, or the error of the first policy (in
// that order) whose run failed.
Status RunPerPolicy(size_t n, int threads, SimulateOutput& out,
                    const std::function<StatusOr<PolicyResult>(size_t)>& run);

}  // namespace berth::sim
