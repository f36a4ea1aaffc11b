// `berth simulate`: replay a trace through the scheduling core under one or
// more policies; print a summary, write JSON / HTML / placement files.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "berth/sim/report/json_report.h"
#include "berth/sim/simulate.h"
#include "commands.h"

namespace berth::apps {
namespace {

struct Flags {
  sim::SimulateOptions sim;
  std::string policies;
  std::string json;
  std::string report;
  std::string placements;
  bool quiet = false;
};

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

void PrintSummary(const sim::SimulateOutput& out) {
  std::printf("cluster: %s\ntrace:   %s\n", out.cluster_summary.c_str(), out.trace_summary.c_str());
  std::fputs(out.trace_skips.c_str(), stdout);
  std::printf("\n");
  std::printf("%-14s %6s %9s %9s %8s %8s %11s %11s %10s  %s\n", "policy", "seed", "alloc%", "placed", "failed",
              "never", "jct_mean_s", "queue_mean", "wall_s", "decision_log_hash");
  for (const auto& r : out.results) {
    std::printf("%-14s %6llu %9.2f %9lld %8lld %8lld %11.1f %11.1f %10.3f  %s\n", r.policy.c_str(),
                static_cast<unsigned long long>(r.seed), 100.0 * r.gpu_allocation_ratio,
                static_cast<long long>(r.jobs_placed), static_cast<long long>(r.jobs_failed),
                static_cast<long long>(r.jobs_never_fit), r.jct_s.mean, r.queue_delay_s.mean, r.wall_seconds,
                r.decision_log_hash.c_str());
  }
}

int Run(Flags& f) {
  f.sim.policies = SplitComma(f.policies);
  f.sim.record_placements = !f.placements.empty();
  auto start = std::chrono::steady_clock::now();
  bool drew = false;
  if (!f.quiet) {
    f.sim.progress = [&](int64_t done, int64_t total) {
      double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (el < 1.0 && !drew) return;
      drew = true;
      const int width = 30;
      int fill = total > 0 ? static_cast<int>(width * done / total) : width;
      std::fprintf(stderr, "\r[%s%s] %lld/%lld policies  %.1fs", std::string(fill, '#').c_str(),
                   std::string(width - fill, '.').c_str(), static_cast<long long>(done),
                   static_cast<long long>(total), el);
    };
  }
  auto out = sim::RunSimulation(f.sim);
  if (drew) std::fprintf(stderr, "\n");
  if (!out.ok()) {
    std::cerr << "berth simulate: " << out.status().message() << "\n";
    return 1;
  }
  PrintSummary(*out);
  if (!f.json.empty()) {
    Status s = sim::WriteJsonReport(*out, f.json);
    if (!s.ok()) {
      std::cerr << "berth simulate: " << s.message() << "\n";
      return 1;
    }
    std::printf("\nwrote %s\n", f.json.c_str());
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
      std::printf("wrote %s\n", path.c_str());
    }
  }
  return 0;
}

}  // namespace

void AddSimulateCommand(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("simulate", "Replay a trace through the scheduler under one or more policies");
  cmd->add_option("--cluster", flags->sim.cluster, "Cluster: FILE (.yaml, or .csv openb node list) or SPEC")
      ->required();
  cmd->add_option("--trace", flags->sim.trace, "Trace file")->required();
  cmd->add_option("--trace-format", flags->sim.trace_format, "openb|philly|gavel|tiresias|native (default: guess)");
  cmd->add_option("--mode", flags->sim.mode, "fgd (one-shot FGD protocol) or replay (default: fgd for openb)");
  cmd->add_option("--load", flags->sim.load, "FGD protocol: arrived GPU demand as a multiple of capacity")
      ->default_val(1.3);
  cmd->add_option("--seed", flags->sim.seed, "Random seed")->default_val(42);
  cmd->add_option("--arrival-order", flags->sim.arrival_order, "FGD protocol: pod order file (index,pod)");
  cmd->add_option("--node-rank", flags->sim.node_rank, "FGD protocol: node ranking file (rank,node)");
  cmd->add_option("--policy", flags->policies, "Policy name(s), comma-separated")->required();
  cmd->add_option("--json", flags->json, "Write results as JSON");
  cmd->add_option("--report", flags->report, "Write an HTML report");
  cmd->add_option("--placements", flags->placements, "Write index,pod,node per arrival (FGD protocol)");
  cmd->add_flag("--skip-bad-lines", flags->sim.skip_bad_lines, "Skip malformed trace lines (counted) instead of stopping");
  cmd->add_option("--max-jobs", flags->sim.max_jobs, "Read at most this many jobs");
  cmd->add_flag("--check-indexes", flags->sim.check_indexes, "Verify state indexes after every change (slow)");
  cmd->add_flag("--quiet", flags->quiet, "No progress bar");
  cmd->callback([flags, &run] { run = [flags] { return Run(*flags); }; });
}

}  // namespace berth::apps
