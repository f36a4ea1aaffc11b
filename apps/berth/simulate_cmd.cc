// `berth simulate`: replay a trace through the scheduling core under one or
// more policies; print a summary, write JSON / HTML / placement files.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <tuple>

#include "berth/common/csv.h"
#include "berth/framework/registry.h"
#include "berth/hetero/allocation_policy.h"
#include "berth/hetero/speed_score.h"
#include "berth/plugins/builtin.h"
#include "berth/sim/report/html_report.h"
#include "berth/sim/report/json_report.h"
#include "berth/sim/report/text_report.h"
#include "berth/sim/simulate.h"
#include "berth/tenancy/queue_yaml.h"
#include "cluster_flags.h"
#include "version_info.h"
#include "commands.h"
#include "federation_cmd.h"
#include "install_paths.h"
#include "services_cmd.h"
#include "progress.h"
#include "simulate_failure_flags.h"

namespace berth::apps {
namespace {

struct Flags {
  sim::SimulateOptions sim;
  // Durations (fair-share half-life, preemption) and the high-priority share, parsed in Run.
  std::string half_life;
  std::string checkpoint_interval;
  std::string preemption_grace;
  std::string restore_cost;
  std::string min_runtime;
  std::string high_priority;
  std::string policies;
  std::string json;
  std::string report;
  std::string placements;
  std::vector<std::string> topology_labels;
  bool catalog_given = false;  // --catalog on the command line (not its default)
  bool quiet = false;
  bool progress = false;
  FederationFlags federation;  // --federation and its flags (federation_cmd.h)
  ServiceSimFlags services;    // --services and --autoscale (services_cmd.h)
  FailureFlags failures;
  std::vector<std::string> argv;  // the command line, for the reports
};

// One argument as a POSIX shell reads it back: bare when it holds only safe
// characters, else in single quotes.
std::string ShellQuote(const std::string& arg) {
  if (!arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                            "-_./=:,@%+") == std::string::npos)
    return arg;
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// "; 'las' is a policy of --workload gavel ..." when a policy the run did
// not know is one of the Gavel rounds' (they run only with --workload gavel).
std::string GavelPolicyHint(const Flags& f) {
  if (f.sim.workload == "gavel") return "";
  hetero::AllocationPolicyRegistry rounds;
  if (!hetero::RegisterAllocationPolicies(rounds).ok()) return "";
  framework::PolicyRegistry policies;
  if (!plugins::RegisterBuiltinPolicies(policies).ok() || !hetero::RegisterHeteroPolicies(policies).ok()) return "";
  for (const std::string& p : f.sim.policies) {
    if (policies.Find(p).ok()) continue;
    const std::vector<std::string> names = rounds.Names();
    if (std::find(names.begin(), names.end(), p) != names.end())
      return "; '" + p + "' is a policy of the Gavel rounds: add --workload gavel (berth policies lists both kinds)";
  }
  return "";
}

sim::RunInfo MakeRunInfo(const Flags& f) {
  sim::RunInfo info;
  info.berth_version = BERTH_VERSION;
  info.git_commit = BERTH_GIT_COMMIT;
  info.build_type = BERTH_BUILD_TYPE;
  for (size_t i = 0; i < f.argv.size(); ++i) {
    // argv[0] as typed may be a path; the program is `berth`.
    const std::string arg = i == 0 ? std::filesystem::path(f.argv[0]).filename().string() : f.argv[i];
    info.command_line += (i ? " " : "") + ShellQuote(arg);
  }
  info.cluster = f.sim.cluster;
  return info;
}

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::string WithPolicy(const std::string& path, const std::string& policy, bool several) {
  if (!several) return path;
  size_t dot = path.find_last_of('.');
  size_t slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + "." + policy;
  return path.substr(0, dot) + "." + policy + path.substr(dot);
}

// --half-life, --checkpoint-interval, --preemption-grace, --restore-cost, --min-runtime, --high-priority.
Status ParsePreemptionFlags(Flags& f) {
  const std::tuple<const char*, std::string*, TimeUs*> durations[] = {
      {"--half-life", &f.half_life, &f.sim.half_life},
      {"--checkpoint-interval", &f.checkpoint_interval, &f.sim.checkpoint_interval},
      {"--preemption-grace", &f.preemption_grace, &f.sim.preemption_grace},
      {"--restore-cost", &f.restore_cost, &f.sim.restore_cost},
      {"--min-runtime", &f.min_runtime, &f.sim.min_runtime}};
  for (const auto& [flag, text, out] : durations) {
    if (text->empty()) continue;
    StatusOr<TimeUs> d = tenancy::ParseQueueDuration(*text);
    if (!d.ok()) return InvalidArgument(std::string(flag) + ": " + d.status().message());
    *out = *d;
  }
  if (!f.high_priority.empty()) {
    const size_t colon = f.high_priority.find(':');
    const std::string share = f.high_priority.substr(0, colon);
    int64_t priority = f.sim.high_priority;
    if (!ParseDouble(share, f.sim.high_priority_share).ok() ||
        (colon != std::string::npos && (!ParseInt64(f.high_priority.substr(colon + 1), priority).ok() ||
                                        priority < INT32_MIN || priority > INT32_MAX)))
      return InvalidArgument("--high-priority must be SHARE[:PRIORITY], e.g. 0.2:10, not '" + f.high_priority + "'");
    f.sim.high_priority = static_cast<int32_t>(priority);
  }
  return Status::Ok();
}

// An output file's folder is made (and checked writable) before the run, so a
// bad path fails at once, not after the whole simulation.
Status PrepareOutput(const std::string& path, const char* flag) {
  if (path.empty() || path == "-") return Status::Ok();
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return InvalidArgument(std::string(flag) + " " + path + ": cannot create the folder " + dir.string() + ": " + ec.message());
  }
  if (::access(dir.empty() ? "." : dir.c_str(), W_OK) != 0)
    return InvalidArgument(std::string(flag) + " " + path + ": the folder " + (dir.empty() ? std::string(".") : dir.string()) + " is not writable");
  if (std::filesystem::is_directory(path, ec)) return InvalidArgument(std::string(flag) + " " + path + ": is a folder");
  return Status::Ok();
}

int Run(Flags& f) {
  f.sim.policies = SplitComma(f.policies);
  for (auto [path, flag] : {std::pair{&f.json, "--json"}, {&f.report, "--report"}, {&f.placements, "--placements"}}) {
    if (Status s = PrepareOutput(*path, flag); !s.ok()) {
      std::cerr << "berth simulate: " << s.message() << "\n";
      return 1;
    }
  }
  if (Status s = ParsePreemptionFlags(f); !s.ok() || !(s = ParseFailureFlags(f.failures, f.sim)).ok()) {
    std::cerr << "berth simulate: " << s.message() << "\n";
    return 1;
  }
  if (!f.federation.federation.empty()) {
    StatusOr<ClusterLoader> members = MakeClusterLoader("", f.topology_labels, f.sim.catalog, f.catalog_given);
    if (!members.ok()) {
      std::cerr << "berth simulate: " << members.status().message() << "\n";
      return 1;
    }
    return RunFederationSimulate(f.federation, f.sim, *members, f.json, f.quiet);
  }
  if (f.sim.cluster.empty()) {
    std::cerr << "berth simulate: --cluster is required (or --federation FILE)\n";
    return 1;
  }
  StatusOr<ClusterLoader> loader = MakeClusterLoader(f.sim.cluster, f.topology_labels, f.sim.catalog, f.catalog_given);
  if (!loader.ok()) {
    std::cerr << "berth simulate: " << loader.status().message() << "\n";
    return 1;
  }
  f.sim.load_cluster = *loader;
  if (!f.services.services.empty()) {
    f.services.rate_scale = f.federation.rate_scale;
    return RunServicesSimulate(f.services, f.sim, f.json);
  }
  f.sim.rate_scale = f.federation.rate_scale;
  f.sim.record_placements = !f.placements.empty();
  std::optional<ProgressBar> bar;
  if (ShouldShowProgress(f.progress, f.quiet)) {
    bar.emplace();
    f.sim.progress = [&bar](int64_t done, int64_t total) { bar->Update(done, total); };
  }
  auto out = sim::RunSimulation(f.sim);
  f.sim.progress = nullptr;
  if (bar) bar->Finish();
  if (!out.ok()) {
    std::cerr << "berth simulate: " << out.status().message() << GavelPolicyHint(f) << "\n";
    return 1;
  }
  out->run = MakeRunInfo(f);
  // `--json -`: the JSON is the standard output, the summary goes to stderr.
  const bool json_stdout = f.json == "-";
  std::FILE* text = json_stdout ? stderr : stdout;
  std::fputs(sim::FormatTextSummary(*out).c_str(), text);
  if (!f.json.empty() || !f.report.empty() || !f.placements.empty()) std::fprintf(text, "\n");
  if (json_stdout) {
    std::fputs((sim::ResultsToJson(*out) + "\n").c_str(), stdout);
  } else if (!f.json.empty()) {
    Status s = sim::WriteJsonReport(*out, f.json);
    if (!s.ok()) {
      std::cerr << "berth simulate: " << s.message() << "\n";
      return 1;
    }
    std::printf("wrote %s\n", f.json.c_str());
  }
  if (!f.report.empty()) {
    Status s = sim::WriteHtmlReport(*out, f.report);
    if (!s.ok()) {
      std::cerr << "berth simulate: " << s.message() << "\n";
      return 1;
    }
    std::fprintf(text, "wrote %s\n", f.report.c_str());
  }
  if (!f.placements.empty()) {
    const bool several = out->results.size() > 1;
    for (const auto& r : out->results) {
      std::string path = WithPolicy(f.placements, r.policy, several);
      std::ofstream pf(path);
      if (!pf) {
        std::cerr << "berth simulate: " << path << ": cannot write\n";
        return 1;
      }
      pf << "index,pod,node\n";
      for (const auto& row : r.placements) pf << row.index << ',' << row.pod << ',' << row.node << '\n';
      std::fprintf(text, "wrote %s\n", path.c_str());
    }
  }
  return 0;
}

}  // namespace

void AddSimulateCommand(CLI::App& app, std::function<int()>& run, std::vector<std::string> argv) {
  auto flags = std::make_shared<Flags>();
  flags->argv = std::move(argv);
  CLI::App* cmd = app.add_subcommand("simulate", "Replay a trace through the scheduler under one or more policies");
  cmd->add_option("--cluster", flags->sim.cluster,
                  "Cluster: FILE (.yaml, .csv openb node list, or .json Kubernetes NodeList from kubectl get nodes "
                  "-o json) or SPEC (required unless --federation is given)");
  cmd->add_option("--federation", flags->federation.federation,
                  "Federation file (YAML, docs/federation.md): simulate the global dispatcher over its member "
                  "clusters; --policy then names dispatch policies (global, multikueue, karmada-weights, "
                  "round-robin, least-loaded, data-local, global-cost, cheapest, fastest)");
  cmd->add_option("--rate-scale", flags->federation.rate_scale,
                  "Arrival rate multiplier (gaps between submissions divided by it): trace replays, --federation and "
                  "--services")
      ->default_val(1);
  cmd->add_option("--member-policy", flags->federation.member_policy,
                  "Federation: the scheduling policy of every member cluster")
      ->default_val("bestfit");
  cmd->add_option("--batch-min", flags->federation.batch_min,
                  "Federation: arrivals at one instant from which global dispatches them as an assignment problem")
      ->default_val(8);
  cmd->add_option("--deadline-factor", flags->federation.deadline_factor,
                  "Federation: give every job without a deadline one of F x its trace duration (0 = none)")
      ->default_val(0);
  cmd->add_option("--member-failures", flags->federation.member_failures,
                  "Federation: YAML file of member outages and partitions, failures: [{domain: D | cluster: C, at_s: S, "
                  "for_s: S, kind: outage|partition}] "
                  "(replaces the federation file's failures; docs/federation.md, \"Member failures (simulator)\")");
  AddTopologyLabelOption(cmd, &flags->topology_labels);
  cmd->add_option("--services", flags->services.services,
                  "Services file (YAML, docs/services.md): services with autoscaling beside the trace's batch jobs");
  cmd->add_option("--autoscale", flags->services.autoscale,
                  "With --services: scaling modes to compare, comma-separated (static, reactive, predictive)")
      ->default_val("static,reactive,predictive");
  cmd->add_option("--colocation", flags->services.colocation,
                  "With --services: co-location modes to compare side by side, comma-separated (none, colocate, "
                  "static, unbounded; docs/services.md, \"Co-location and overcommit\")")
      ->default_val("none");
  cmd->add_option("--overcommit", flags->services.overcommit,
                  "With --services: best-effort work's share (0..1) of each node reserved for services (the file's "
                  "colocation.overcommit)");
  cmd->add_option("--yield-best-effort", flags->services.yield_best_effort,
                  "With --services --colocation colocate: best-effort work gives capacity back within this, e.g. 30s");
  cmd->add_option("--yield-training-grace", flags->services.yield_training_grace,
                  "With --services --colocation colocate: checkpointing work leaves at its next checkpoint if it "
                  "comes within this, else after it, e.g. 5m");
  cmd->add_option("--trace", flags->sim.trace, "Trace file (required unless --workload is given)");
  cmd->add_option("--trace-format", flags->sim.trace_format, "openb|philly|gavel|tiresias|pollux|native (default: guess)");
  cmd->add_option("--mode", flags->sim.mode, "fgd (one-shot FGD protocol) or replay (default: fgd for openb)");
  cmd->add_option("--comm-fraction", flags->sim.comm_fraction,
                  "Replay: communication share of a step; gangs spanning nodes run longer by the bandwidth they lose "
                  "(0 = off)")
      ->default_val(0);
  cmd->add_option("--partition", flags->sim.partition,
                  "Replay: LEVEL[:PREFIX] - independent partitions, one per domain at LEVEL (e.g. cluster); "
                  "each job runs in the domain named PREFIX + its tenant (e.g. leaf:vc- for Philly VCs)");
  cmd->add_option("--load", flags->sim.load, "FGD protocol: arrived GPU demand as a multiple of capacity")
      ->default_val(1.3);
  cmd->add_option("--seed", flags->sim.seed, "Random seed")->default_val(42);
  cmd->add_option("--arrival-order", flags->sim.arrival_order, "FGD protocol: pod order file (index,pod)");
  cmd->add_option("--node-rank", flags->sim.node_rank, "FGD protocol: node ranking file (rank,node)");
  cmd->add_option("--policy", flags->policies, "Policy name(s), comma-separated (berth policies lists them)")
      ->required();
  cmd->add_option("--threads", flags->sim.threads,
                  "Run the policies of --policy side by side on N threads (default 0: the machine's cores; 1: one "
                  "after another); the same results and hashes for any N")
      ->check(CLI::Range(0, 1024))
      ->default_val(0);
  cmd->add_option("--json", flags->json, "Write results as JSON to FILE (- for standard output; the summary then goes to stderr)");
  cmd->add_option("--report", flags->report, "Write an HTML report (one self-contained file)");
  cmd->add_option("--placements", flags->placements, "Write index,pod,node per arrival (FGD protocol)");
  cmd->add_flag("--skip-bad-lines", flags->sim.skip_bad_lines, "Skip malformed trace lines (counted) instead of stopping");
  cmd->add_option("--max-jobs", flags->sim.max_jobs, "Read at most this many jobs");
  cmd->add_option("--stream-trace", flags->sim.stream_trace,
                  "Replay: auto (default), on or off - read a native trace's jobs as their submit times come "
                  "instead of holding them all (docs/trace-formats.md); the same results")
      ->default_val("auto");
  cmd->add_option("--from", flags->sim.window_from, "philly: keep jobs submitted at or after YYYY-MM-DD[ HH:MM:SS]");
  cmd->add_option("--to", flags->sim.window_to, "philly: keep jobs submitted at or before YYYY-MM-DD[ HH:MM:SS]");
  cmd->add_option("--tenants", flags->sim.tenants, "philly: keep only these VCs (comma-separated)")->delimiter(',');
  cmd->add_option("--tenants-from", flags->sim.tenants_from,
                  "Replay: which trace field is the tenant: vc (Philly virtual clusters), user (native traces' "
                  "tenant), none (one tenant); default: as the reader sets it");
  cmd->add_option("--queues", flags->sim.queues,
                  "Replay: queue tree (YAML, docs/queues.md); default: one queue per tenant, guaranteed its share "
                  "of the trace's GPU demand");
  cmd->add_option("--half-life", flags->half_life,
                  "Replay: half-life of the usage history of fair share, e.g. 12h (default: the queue file's, "
                  "else no decay)");
  cmd->add_option("--checkpoint-interval", flags->checkpoint_interval,
                  "Replay: checkpoint interval of jobs whose trace gives none, e.g. 30m (default: they never "
                  "checkpoint; an evicted job restarts from scratch)");
  cmd->add_option("--preemption-grace", flags->preemption_grace,
                  "Replay: grace an evicted job gets to checkpoint and leave, e.g. 30s; its preemptor starts that "
                  "much later (default 0)");
  cmd->add_option("--restore-cost", flags->restore_cost,
                  "Replay: time a resumed job spends restoring its checkpoint before working, e.g. 2m (default 0)");
  cmd->add_option("--plugin-arg", flags->sim.plugin_args,
                  "PLUGIN.KEY=VALUE: an argument of a policy's plugin, on every policy of the run that uses it "
                  "(repeatable), e.g. goodput.round_s=30 (README, \"Plugin arguments\")");
  cmd->add_option("--min-runtime", flags->min_runtime,
                  "Replay: the least a job runs before preemption may evict it, e.g. 5m (default 10m); policies "
                  "that preempt only");
  cmd->add_option("--high-priority", flags->high_priority,
                  "SHARE[:PRIORITY]: a seeded share of the jobs (by job id) gets this priority (default 10), the "
                  "others keep the trace's, e.g. 0.2:10");
  AddFailureOptions(cmd, flags->sim, flags->failures);
  cmd->add_flag("--check-indexes", flags->sim.check_indexes, "Verify state indexes after every change (slow)");
  cmd->add_flag("--full-scan", flags->sim.full_scan,
                "Filter and score every node for every task instead of searching the state's indexes "
                "(same decisions, slower: the reference to check them against)");
  cmd->add_flag("--full-sort", flags->sim.full_sort,
                "Sort the whole pending queue at every pass instead of keeping a bucketed order (fairshare) "
                "incrementally (same decisions, slower; --full-scan implies it)");
  cmd->add_flag("--full-preempt", flags->sim.full_preempt,
                "Rebuild the preemption candidates and search victims for every blocked job instead of keeping "
                "them while nothing changes (same decisions, slower; --full-scan implies it)");
  auto* quiet = cmd->add_flag("--quiet", flags->quiet, "No progress bar");
  cmd->add_flag("--progress", flags->progress, "Show the progress bar even when stderr is not a terminal")
      ->excludes(quiet);
  // Generated workloads (Gavel's heterogeneity experiments).
  cmd->add_option("--workload", flags->sim.workload, "Generated workload instead of a trace: gavel");
  cmd->add_option("--rate", flags->sim.rate_per_hour, "gavel: arrival rate, jobs per hour")->default_val(5.6);
  cmd->add_option("--jobs", flags->sim.jobs, "gavel: number of jobs")->default_val(6000);
  cmd->add_option("--measure", flags->sim.measure, "gavel: BEGIN:END job ids whose JCT is reported (e.g. 4000:5000)");
  cmd->add_flag("--multi-gpu", flags->sim.multi_gpu, "gavel: multi-GPU jobs (scale factors 1/2/4/8)");
  cmd->add_flag("--static", flags->sim.static_trace, "gavel: every job arrives at t=0 (makespan runs)");
  cmd->add_flag("--priorities", flags->sim.priorities, "gavel: priority weights (5 with prob. 0.2)");
  cmd->add_option("--throughputs", flags->sim.throughputs, "gavel: measured throughput table (Gavel JSON)")
      ->default_val(SharedDataFile("gavel/simulation_throughputs.json"));
  cmd->add_option("--catalog", flags->sim.catalog, "Accelerator catalog YAML")->default_val(ShippedFile("data/accelerators.yaml"));
  cmd->add_option("--reference-type", flags->sim.reference_type, "Reference accelerator of normalized units")
      ->default_val("H100");
  cmd->add_option("--round", flags->sim.round_s, "gavel: scheduling round, seconds")->default_val(360);
  cmd->add_option("--consolidation", flags->sim.consolidation,
                  "gavel: multi-GPU job speed: gavel (always the consolidated throughput, as Gavel's simulator) or "
                  "placement (unconsolidated when the job spans nodes)")
      ->default_val("gavel");
  cmd->add_option("--mechanism", flags->sim.mechanism,
                  "gavel: round mechanism: gavel (Gavel's priorities, allocation reset at most every 1920 s) or "
                  "deficit (reallocate on every change, lifetime deficits)")
      ->default_val("gavel");
  cmd->callback([flags, &run, cmd] {
    flags->catalog_given = cmd->count("--catalog") > 0;
    run = [flags] { return Run(*flags); };
  });
}

}  // namespace berth::apps
