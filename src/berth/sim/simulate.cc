// Wiring of a simulation: cluster, trace, registries, one run per policy.
#include "berth/sim/simulate.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <optional>

#include "berth/cluster/loaders.h"
#include "berth/common/parallel_for.h"
#include "berth/faults/failure_file.h"
#include "berth/faults/handler.h"
#include "berth/hetero/ledger_speeds.h"
#include "berth/hetero/speed_score.h"
#include "berth/plugins/builtin.h"
#include "berth/sim/fgd_protocol.h"
#include "berth/sim/gavel/gavel_sim.h"
#include "berth/sim/readers/readers.h"
#include "berth/sim/replay.h"
#include "berth/sim/workflow_replay.h"
#include "berth/tenancy/queue_yaml.h"

namespace berth::sim {

// --lend-spares: nullopt (off), -1 (on: any runtime) or the longest declared runtime limit.
static StatusOr<std::optional<TimeUs>> ParseLendSpares(const std::string& s) {
  if (s == "off") return std::optional<TimeUs>();
  if (s == "on") return std::optional<TimeUs>(-1);
  StatusOr<TimeUs> d = tenancy::ParseQueueDuration(s);
  if (!d.ok() || *d < 0)
    return InvalidArgument("--lend-spares must be off, on or a runtime limit such as 2h, not '" + s + "'");
  return std::optional<TimeUs>(*d);
}

Status SimulateOptions::Validate() const {
  if (cluster.empty()) return InvalidArgument("--cluster is required");
  if (!workload.empty() && workload != "gavel")
    return InvalidArgument("--workload must be gavel, not '" + workload + "'");
  if (trace.empty() && workload.empty()) return InvalidArgument("--trace is required");
  if (policies.empty()) return InvalidArgument("--policy is required");
  if (!mode.empty() && mode != "fgd" && mode != "replay")
    return InvalidArgument("--mode must be fgd or replay, not '" + mode + "'");
  if (load <= 0 || load > 100) return InvalidArgument("--load must be in (0, 100]");
  if (!partition.empty() && !cluster::ParseLevel(partition.substr(0, partition.find(':'))))
    return InvalidArgument("--partition must be LEVEL or LEVEL:PREFIX with a topology level (region, cluster, "
                           "spine, leaf), not '" + partition + "'");
  if (!partition.empty() && mode == "fgd") return InvalidArgument("--partition needs --mode replay");
  if (!tenants_from.empty() && tenants_from != "vc" && tenants_from != "user" && tenants_from != "none")
    return InvalidArgument("--tenants-from must be vc, user or none, not '" + tenants_from + "'");
  if (tenants_from == "none" && !partition.empty())
    return InvalidArgument("--tenants-from none cannot be combined with --partition, which routes jobs by tenant");
  if (half_life < -1) return InvalidArgument("--half-life must not be negative");
  if (!queues.empty() && mode == "fgd") return InvalidArgument("--queues needs --mode replay");
  if (checkpoint_interval == 0 || checkpoint_interval < -1)
    return InvalidArgument("--checkpoint-interval must be positive");
  if (preemption_grace < 0) return InvalidArgument("--preemption-grace must not be negative");
  if (restore_cost < 0) return InvalidArgument("--restore-cost must not be negative");
  if (min_runtime < -1) return InvalidArgument("--min-runtime must not be negative");
  if (!failures.empty() && mode == "fgd") return InvalidArgument("--failures needs --mode replay");
  if (!repair.empty() && !faults::ParseRepairMode(repair))
    return InvalidArgument("--repair must be requeue or in-place, not '" + repair + "'");
  if (Status s = faults::ParseSpareSetting(spares).status(); !s.ok()) return s;
  if (failures.empty() && (spares != "none" || !repair.empty()))
    return InvalidArgument("--spares and --repair need --failures");
  if (restart_cost < 0 || repair_cost < 0) return InvalidArgument("--restart-cost and --repair-cost must not be negative");
  if (until < -1) return InvalidArgument("--until must not be negative");
  if (Status s = ParseLendSpares(lend_spares).status(); !s.ok()) return s;
  if (lend_spares != "off" && faults::ParseSpareSetting(spares)->mode == faults::SpareMode::kNone)
    return InvalidArgument("--lend-spares needs --spares leaf or spine (and --failures)");
  if (!(rate_scale > 0) || !std::isfinite(rate_scale) || rate_scale > 1e6)
    return InvalidArgument("--rate-scale must be a positive number (at most 1e6)");
  if (rate_scale != 1 && (mode == "fgd" || workload == "gavel"))
    return InvalidArgument("--rate-scale needs a trace replay (not --mode fgd or --workload gavel)");
  if (stream_trace != "auto" && stream_trace != "on" && stream_trace != "off")
    return InvalidArgument("--stream-trace must be auto, on or off, not '" + stream_trace + "'");
  if (!(high_priority_share >= 0 && high_priority_share <= 1))
    return InvalidArgument("--high-priority: the share must be in [0, 1]");
  return Status::Ok();
}

namespace {

// Submission gaps divided by `scale`, from the first submission.
void RescaleArrivals(std::vector<job::JobSpec>& jobs, double scale) {
  if (jobs.empty()) return;
  TimeUs first = jobs.front().submit_time;
  for (const auto& j : jobs) first = std::min(first, j.submit_time);
  for (auto& j : jobs)
    j.submit_time = first + static_cast<TimeUs>(std::llround(static_cast<double>(j.submit_time - first) / scale));
}

// Applies --tenants-from to the jobs as read. The readers put in
// JobSpec::tenant: philly the VC (`cluster` column), gavel the VC for Philly's
// per-VC files (the file name) and nothing otherwise, native its `tenant`
// field, openb the pod's QoS class, tiresias nothing.
Status ApplyTenantsFrom(const std::string& from, Trace& trace) {
  if (from.empty()) return Status::Ok();
  if (from == "none") {
    for (auto& j : trace.jobs) j.tenant.clear();
    return Status::Ok();
  }
  const bool any_tenant =
      std::any_of(trace.jobs.begin(), trace.jobs.end(), [](const job::JobSpec& j) { return !j.tenant.empty(); });
  if (from == "vc") {
    if (trace.format == "philly" || (trace.format == "gavel" && any_tenant)) return Status::Ok();
    return InvalidArgument("--tenants-from vc: this " + trace.format +
                           " trace has no virtual-cluster field (philly traces and Gavel's per-VC Philly files have)");
  }
  if (trace.format == "native") return Status::Ok();  // from == "user": its tenant field
  return InvalidArgument("--tenants-from user: this " + trace.format + " trace has no user field" +
                         (trace.format == "openb" ? " (its qos column is a QoS class, not a user)"
                          : trace.format == "philly" ? " (the per-job Philly CSV keeps only the VC: use vc)"
                                                     : "") +
                         "; native traces carry one in `tenant`");
}

// Whether job `id` is among the seeded share raised to high priority: a
// SplitMix64 hash of (seed, id) as a number in [0, 1), below the share. Per
// job, so a job's priority does not depend on which others the filters keep.
bool HighPriority(uint64_t seed, int64_t id, double share) {
  uint64_t z = seed ^ (static_cast<uint64_t>(id) * 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53 < share;
}

// The preemption experiments' changes to a job as read: checkpoints and
// priorities the trace does not give, best-effort tenants.
void AdjustJob(const SimulateOptions& o, job::JobSpec& j, size_t index) {
  if (o.checkpoint_interval > 0 && j.checkpoint_interval <= 0) j.checkpoint_interval = o.checkpoint_interval;
  if (std::find(o.best_effort_tenants.begin(), o.best_effort_tenants.end(), j.tenant) != o.best_effort_tenants.end())
    j.best_effort = true;
  if (o.high_priority_share > 0 &&
      HighPriority(o.seed, j.id.valid() ? j.id.value() : static_cast<int64_t>(index), o.high_priority_share))
    j.priority = o.high_priority;
}

// Whether this run may stream its trace (trace_stream.h) before the file is
// read: a native trace replayed without failures (plugins that read the
// workload up front get the facts of the first read). The file itself may
// still refuse (StreamedTrace::Streamable).
bool MayStream(const SimulateOptions& o) {
  if (o.stream_trace == "off") return false;
  const std::string fmt = o.trace_format.empty() ? GuessTraceFormat(o.trace) : o.trace_format;
  if (fmt != "native" || o.mode == "fgd" || !o.failures.empty()) return false;
  // Filters and bad limits: ReadTrace refuses them with its own errors.
  if (o.max_jobs == 0 || o.max_jobs < -1 || !o.window_from.empty() || !o.window_to.empty() || !o.tenants.empty())
    return false;
  return true;
}

}  // namespace

StatusOr<cluster::Cluster> SimulateOptions::LoadClusterFile() const {
  return load_cluster ? load_cluster(cluster) : cluster::LoadCluster(cluster);
}

Status RunPerPolicy(size_t n, int threads, SimulateOutput& out,
                    const std::function<StatusOr<PolicyResult>(size_t)>& run) {
  BERTH_ASSIGN_OR_RETURN(std::vector<PolicyResult> results, ParallelMap<PolicyResult>(n, threads, run));
  for (auto& r : results) out.results.push_back(std::move(r));
  return Status::Ok();
}

StatusOr<SimulateOutput> RunSimulation(const SimulateOptions& o) {
  BERTH_RETURN_IF_ERROR(o.Validate());
  if (o.workload == "gavel") return gavel::RunGavelSimulation(o);
  framework::PluginRegistry plugins;
  BERTH_RETURN_IF_ERROR(plugins::RegisterBuiltinPlugins(plugins));
  framework::PolicyRegistry policies;
  BERTH_RETURN_IF_ERROR(plugins::RegisterBuiltinPolicies(policies));
  BERTH_RETURN_IF_ERROR(hetero::RegisterHeteroPolicies(policies));
  std::vector<framework::Profile> profiles;
  bool hetero_scores = false;
  for (const auto& name : o.policies) {
    BERTH_ASSIGN_OR_RETURN(framework::Profile p, policies.Find(name));
    p.name = name;
    if (o.min_runtime >= 0) BERTH_RETURN_IF_ERROR(plugins::SetMinRuntime(p, o.min_runtime));
    hetero_scores = hetero_scores || hetero::UsesHeteroPlugins(p);
    profiles.push_back(std::move(p));
  }
  {
    std::vector<framework::Profile*> all;
    for (auto& p : profiles) all.push_back(&p);
    if (Status s = framework::ApplyPluginArgs(all, o.plugin_args); !s.ok())
      return InvalidArgument("--plugin-arg: " + s.message());
  }
  // hetero-speed / hetero-cost read the throughput model: --catalog's specs,
  // fitted to --throughputs.
  if (hetero_scores) {
    BERTH_ASSIGN_OR_RETURN(auto model, hetero::LoadThroughputModel(o.catalog, o.throughputs));
    BERTH_RETURN_IF_ERROR(hetero::RegisterHeteroPlugins(plugins, std::move(model)));
  }
  BERTH_ASSIGN_OR_RETURN(cluster::Cluster cluster, o.LoadClusterFile());
  ReadOptions ro;
  ro.skip_bad_lines = o.skip_bad_lines;
  ro.max_jobs = o.max_jobs;
  ro.window_from = o.window_from;
  ro.window_to = o.window_to;
  ro.tenants = o.tenants;
  // A streamed trace (--stream-trace): a first read keeps each job's facts,
  // the replay reads the specs again as their submit times come.
  std::optional<StreamedTrace> streamed;
  if (MayStream(o)) {
    Trace native;
    native.format = "native";
    BERTH_RETURN_IF_ERROR(ApplyTenantsFrom(o.tenants_from, native));  // what the format allows
    BERTH_ASSIGN_OR_RETURN(StreamedTrace st, ScanNativeTrace(o.trace, ro, [&o](job::JobSpec& j) {
                             if (o.tenants_from == "none") j.tenant.clear();
                             AdjustJob(o, j, static_cast<size_t>(j.id.value()));
                           }));
    if (Status why = st.Streamable(); why.ok()) {
      st.Rescale(o.rate_scale);
      streamed = std::move(st);
    } else if (o.stream_trace == "on") {
      return InvalidArgument("--stream-trace on: " + why.message());
    }
  } else if (o.stream_trace == "on") {
    return InvalidArgument(
        "--stream-trace on needs a native trace (.jsonl) replayed without --failures, --from, --to, --tenants or "
        "--mode fgd");
  }
  Trace trace;
  if (!streamed) {
    BERTH_ASSIGN_OR_RETURN(trace, ReadTrace(o.trace, o.trace_format, ro));
    BERTH_RETURN_IF_ERROR(ApplyTenantsFrom(o.tenants_from, trace));
    for (size_t i = 0; i < trace.jobs.size(); ++i) AdjustJob(o, trace.jobs[i], i);
  }
  const Trace& head = streamed ? streamed->head : trace;  // format, report, workflows
  const std::string mode = !o.mode.empty() ? o.mode : head.format == "openb" ? "fgd" : "replay";
  if (o.rate_scale != 1 && !streamed) {
    if (mode != "replay") return InvalidArgument("--rate-scale needs --mode replay");
    if (!trace.workflows.empty()) return InvalidArgument("--rate-scale: traces with workflows are not rescaled yet");
    RescaleArrivals(trace.jobs, o.rate_scale);
  }

  SimulateOutput out;
  out.cluster_summary = cluster.Summary();
  out.trace_summary = head.format + ": " + head.report.Summary();
  if (!head.workflows.empty()) {
    out.trace_summary += "; " + std::to_string(head.workflows.size()) + " workflow(s)";
    if (mode != "replay") return InvalidArgument("workflows (lines with stages) need --mode replay");
  }
  out.trace_skips = head.report.SkipDetails();
  out.trace_name = o.trace.substr(o.trace.find_last_of('/') == std::string::npos ? 0 : o.trace.find_last_of('/') + 1);
  if (mode == "fgd") {
    FgdOptions fo;
    fo.load = o.load;
    fo.seed = o.seed;
    fo.arrival_order_file = o.arrival_order;
    fo.node_rank_file = o.node_rank;
    fo.record_placements = o.record_placements;
    fo.check_indexes = o.check_indexes;
    fo.full_scan = o.full_scan;
    BERTH_ASSIGN_OR_RETURN(FgdInput input, BuildFgdInput(cluster, trace, fo));
    std::atomic<int64_t> finished{0};
    BERTH_RETURN_IF_ERROR(RunPerPolicy(profiles.size(), o.threads, out, [&](size_t i) -> StatusOr<PolicyResult> {
      StatusOr<PolicyResult> r = RunFgd(cluster, input, profiles[i], plugins, fo);
      if (o.progress) o.progress(finished.fetch_add(1) + 1, static_cast<int64_t>(profiles.size()));
      return r;
    }));
    return out;
  }
  if (!o.partition.empty() && mode != "replay") return InvalidArgument("--partition needs --mode replay");
  ReplayOptions ro_replay;
  ro_replay.runtime.comm_fraction = o.comm_fraction;
  ro_replay.seed = o.seed;
  ro_replay.check_indexes = o.check_indexes;
  ro_replay.full_scan = o.full_scan;
  ro_replay.full_sort = o.full_sort;
  ro_replay.full_preempt = o.full_preempt;
  // Every replay charges a queue tree: the --queues file, or by default one
  // leaf per tenant guaranteed its share of the trace's GPU demand. Only
  // plugins that read the ledger (quota, fair share, reclaim) act on it; the
  // others decide as they would without it.
  ro_replay.usage_half_life = std::max<TimeUs>(0, o.half_life);
  if (!o.queues.empty()) {
    BERTH_ASSIGN_OR_RETURN(tenancy::QueueFile file, tenancy::ReadQueueFile(o.queues));
    BERTH_ASSIGN_OR_RETURN(tenancy::QueueTree tree, tenancy::BuildQueueTree(file, o.queues, cluster));
    BERTH_RETURN_IF_ERROR(hetero::AddCatalogPrices(tree, o.catalog));
    if (o.half_life < 0 && file.has_half_life) ro_replay.usage_half_life = file.half_life;
    // Normalized units: the throughput model (--catalog, --throughputs) converts GPUs to reference GPUs.
    BERTH_ASSIGN_OR_RETURN(ro_replay.speeds, hetero::SpeedsForTree(tree, o.catalog, o.throughputs, cluster));
    ro_replay.queues = std::make_shared<const tenancy::QueueTree>(std::move(tree));
  } else if (streamed) {
    const JobTable& table = streamed->table;
    ro_replay.queues = std::make_shared<const tenancy::QueueTree>(tenancy::QueueTree::FromTenantShares(
        table.jobs.size(),
        [&](size_t i) {
          return tenancy::QueueTree::JobDemand{table.tenant(i), table.jobs[i].milli_gpu, table.jobs[i].duration};
        },
        cluster));
  } else {
    // The trace's jobs are read in place (a copy of millions of jobs would
    // double the run's peak memory); workflows are expanded first.
    std::optional<WorkflowReplay> expanded;
    if (!trace.workflows.empty()) expanded = ExpandWorkflows(trace);
    ro_replay.queues = std::make_shared<const tenancy::QueueTree>(
        tenancy::QueueTree::FromTenantShares(expanded ? expanded->trace.jobs : trace.jobs, cluster));
  }
  ro_replay.preemption_grace = o.preemption_grace;
  ro_replay.restore_cost = o.restore_cost;
  ro_replay.until = o.until;
  if (!o.failures.empty()) {
    BERTH_ASSIGN_OR_RETURN(faults::FailureSpec spec, faults::LoadFailures(o.failures, cluster));
    ro_replay.failures = std::make_shared<const faults::FailureSpec>(std::move(spec));
    BERTH_ASSIGN_OR_RETURN(ro_replay.fault_options.spares, faults::ParseSpareSetting(o.spares));
    ro_replay.fault_options.repair =
        !o.repair.empty() ? *faults::ParseRepairMode(o.repair)
        : ro_replay.fault_options.spares.mode != faults::SpareMode::kNone ? faults::RepairMode::kInPlace
                                                                         : faults::RepairMode::kRequeue;
    ro_replay.fault_options.restart_cost = o.restart_cost;
    ro_replay.fault_options.repair_cost = o.repair_cost;
    BERTH_ASSIGN_OR_RETURN(std::optional<TimeUs> lend, ParseLendSpares(o.lend_spares));
    ro_replay.fault_options.lend_spares = lend.has_value();
    if (lend) ro_replay.fault_options.lend_max_runtime = *lend;
  }
  if (!o.partition.empty()) {
    const size_t colon = o.partition.find(':');
    ro_replay.partition_level = cluster::ParseLevel(o.partition.substr(0, colon));
    if (colon != std::string::npos) ro_replay.partition_prefix = o.partition.substr(colon + 1);
  }
  // Progress over all runs: each run's events done, summed (runs may go on
  // side by side with --threads).
  const auto runs = static_cast<int64_t>(profiles.size());
  std::vector<std::atomic<int64_t>> done(profiles.size());
  BERTH_RETURN_IF_ERROR(RunPerPolicy(profiles.size(), o.threads, out, [&](size_t i) -> StatusOr<PolicyResult> {
    ReplayOptions run = ro_replay;
    if (o.progress) {
      run.progress = [&o, &done, i, runs](int64_t d, int64_t total) {
        done[i].store(d);
        int64_t sum = 0;
        for (const auto& n : done) sum += n.load();
        o.progress(sum, runs * total);
      };
    }
    return streamed ? RunReplay(cluster, *streamed, profiles[i], plugins, run)
                    : RunReplay(cluster, trace, profiles[i], plugins, run);
  }));
  return out;
}

}  // namespace berth::sim
