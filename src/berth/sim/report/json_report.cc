// JSON report writer.
#include "berth/sim/report/json_report.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "berth/sim/report/downsample.h"

namespace berth::sim {
namespace {

constexpr size_t kMaxSeriesPoints = 1000;

// A figure of a distribution, or null when nothing was measured (the text
// summary's "-"): in FGD mode nothing finishes, so there is no JCT.
nlohmann::json Stat(const Distribution& d, double v) { return d.count > 0 ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json Dist(const Distribution& d) {
  return {{"count", d.count},         {"mean", Stat(d, d.mean)}, {"p50", Stat(d, d.p50)},
          {"p95", Stat(d, d.p95)},    {"p99", Stat(d, d.p99)},   {"max", Stat(d, d.max)}};
}

// What produced the run: version, commit, command line, cluster.
nlohmann::json RunJson(const SimulateOutput& out) {
  nlohmann::json j = nlohmann::json::object();
  auto put = [&j](const char* key, const std::string& v) {
    if (!v.empty()) j[key] = v;
  };
  put("berth_version", out.run.berth_version);
  put("git_commit", out.run.git_commit);
  put("build_type", out.run.build_type);
  put("command_line", out.run.command_line);
  put("cluster", out.run.cluster);
  put("cluster_summary", out.cluster_summary);
  put("trace_summary", out.trace_summary);
  return j;
}

nlohmann::json Tenants(const std::vector<TenantResult>& tenants) {
  nlohmann::json arr = nlohmann::json::array();
  for (const TenantResult& t : tenants) {
    nlohmann::json& item = arr.emplace_back(nlohmann::json{{"tenant", t.tenant},
                   {"queue", t.queue},
                   {"jobs", t.jobs},
                   {"jobs_finished", t.jobs_finished},
                   {"jct_mean_s", Stat(t.jct_s, t.jct_s.mean)},
                   {"jct_p99_s", Stat(t.jct_s, t.jct_s.p99)},
                   {"queue_delay_mean_s", Stat(t.queue_delay_s, t.queue_delay_s.mean)},
                   {"queue_delay_p99_s", Stat(t.queue_delay_s, t.queue_delay_s.p99)},
                   {"gpu_share", t.gpu_share},
                   {"guarantee_share", t.guarantee_share},
                   {"fair_gpus", t.fair_gpus},
                   {"rho_mean", Stat(t.rho, t.rho.mean)},
                   {"rho_p99", Stat(t.rho, t.rho.p99)},
                   {"rho_max", Stat(t.rho, t.rho.max)},
                   {"preemptions", t.preemptions},
                   {"gpu_hours_lost", t.gpu_hours_lost}});
    if (t.normalized_share >= 0) {
      item["normalized_share"] = t.normalized_share;
      item["normalized_entitlement_ratio"] = t.normalized_entitlement_ratio;
    }
    if (t.entitled_share >= 0) {
      item["entitled_share"] = t.entitled_share;
      item["entitled_ratio"] = t.entitled_ratio;
    }
  }
  return arr;
}

nlohmann::json Budgets(const std::vector<BudgetResult>& budgets) {
  nlohmann::json arr = nlohmann::json::array();
  for (const BudgetResult& b : budgets)
    arr.push_back({{"queue", b.queue},
                   {"unit", b.unit},
                   {"period", b.period},
                   {"when_spent", b.when_spent},
                   {"amount", b.amount},
                   {"spent_total", b.spent_total},
                   {"spent_period", b.spent_period},
                   {"exhausted_at_end", b.exhausted_at_end},
                   {"starts", b.starts},
                   {"best_effort_starts", b.best_effort_starts},
                   {"over_budget_starts", b.over_budget_starts},
                   {"evictions", b.evictions},
                   {"best_effort_evictions", b.best_effort_evictions},
                   {"jobs_waited_for_budget", b.jobs_waited_for_budget}});
  return arr;
}

// [[x, y], ...]: finite points, thinned to kMaxSeriesPoints, rounded to 1e-4.
nlohmann::json Series(const std::vector<Point>& points) {
  auto round = [](double v) { return std::round(v * 1e4) / 1e4; };
  nlohmann::json arr = nlohmann::json::array();
  for (const Point& p : FinitePoints(Downsample(points, kMaxSeriesPoints))) arr.push_back({round(p.x), round(p.y)});
  return arr;
}

// Puts arrays that hold only numbers on one line: `[\n  1.5,\n  2\n]` becomes
// `[1.5, 2]`, so a series reads one point per line.
std::string CompactNumberArrays(const std::string& pretty) {
  std::string out;
  out.reserve(pretty.size());
  bool in_string = false;
  for (size_t i = 0; i < pretty.size(); ++i) {
    const char c = pretty[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\' && i + 1 < pretty.size()) out.push_back(pretty[++i]);
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '[') {
      const size_t end = pretty.find_first_not_of("0123456789+-.eE, \n", i + 1);
      if (end != std::string::npos && pretty[end] == ']' && end > i + 1) {
        out.push_back('[');
        bool need_space = false;
        for (size_t k = i + 1; k < end; ++k) {
          const char d = pretty[k];
          if (d == ' ' || d == '\n') continue;
          if (need_space) out.push_back(' ');
          out.push_back(d);
          need_space = d == ',';
        }
        out.push_back(']');
        i = end;
        continue;
      }
    }
    out.push_back(c);
  }
  return out;
}

// The failure model's figures (docs/failures.md).
void AddFailureFigures(const PolicyResult& r, nlohmann::json& j) {
  j["goodput"] = r.goodput;
  j["useful_gpu_hours"] = r.useful_gpu_hours;
  j["allocated_gpu_hours"] = r.allocated_gpu_hours;
  nlohmann::json ett = nlohmann::json::object();
  ett["mean_large_jobs"] = r.effective_training_time_large < 0 ? nlohmann::json(nullptr)
                                                               : nlohmann::json(r.effective_training_time_large);
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& e : r.effective_training_time)
    jobs.push_back({{"job", e.job}, {"gpus", e.gpus}, {"ett", e.ett}, {"restarts", e.restarts}, {"repairs", e.repairs}});
  ett["jobs"] = std::move(jobs);
  j["effective_training_time"] = std::move(ett);
  nlohmann::json by_cause = nlohmann::json::object();
  for (const auto& [cause, n] : r.failures) by_cause[cause] = n;
  j["failures"] = std::move(by_cause);
  nlohmann::json hits = nlohmann::json::object();
  for (const auto& [cause, n] : r.interruptions) hits[cause] = n;
  j["interruptions"] = std::move(hits);
  j["jobs_lost"] = r.jobs_lost;
  j["restarts"] = r.restarts;
  j["repairs"] = r.repairs;
  j["repair_fallbacks"] = r.repair_fallbacks;
  j["repair"] = r.repair_mode;
  j["spares"] = r.spare_mode;
  j["spare_nodes"] = r.spare_nodes;
  j["spares_used"] = r.spares_used;
  j["lend_spares"] = r.lend_spares;
  j["spare_loans"] = r.spare_loans;
  j["spare_loan_evictions"] = r.spare_loan_evictions;
  j["spare_gpu_hours"] = r.spare_gpu_hours;
  j["spare_lent_gpu_hours"] = r.spare_lent_gpu_hours;
  j["spare_utilization"] = r.spare_utilization;
  j["quarantines"] = r.quarantines;
  j["drained_by_deadline"] = r.drained_by_deadline;
  j["gpu_hours_lost_failures"] = r.gpu_hours_lost_failures;
  j["gpu_hours_lost_recovery"] = r.gpu_hours_lost_recovery;
}

}  // namespace

std::string ResultsToJson(const SimulateOutput& out) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : out.results) {
    nlohmann::json j;
    j["policy"] = r.policy;
    j["mode"] = r.mode;
    j["seed"] = r.seed;
    if (r.mode == "fgd") j["load"] = r.load;
    j["trace"] = out.trace_name;
    j["gpu_allocation_ratio"] = r.gpu_allocation_ratio;
    j["allocated_milli_gpu"] = r.allocated_milli_gpu;
    j["capacity_milli_gpu"] = r.capacity_milli_gpu;
    j["jobs_total"] = r.jobs_total;
    j["jobs_placed"] = r.jobs_placed;
    j["jobs_failed"] = r.jobs_failed;
    j["jobs_never_fit"] = r.jobs_never_fit;
    j["jobs_unfinished"] = r.jobs_unfinished;
    if (r.mode == "replay") j["jobs_stretched"] = r.jobs_stretched;
    j["jct_mean_s"] = Stat(r.jct_s, r.jct_s.mean);
    j["jct_p99_s"] = Stat(r.jct_s, r.jct_s.p99);
    j["jct_s"] = Dist(r.jct_s);
    j["queue_delay_mean_s"] = Stat(r.queue_delay_s, r.queue_delay_s.mean);
    j["queue_delay_p99_s"] = Stat(r.queue_delay_s, r.queue_delay_s.p99);
    j["queue_delay_s"] = Dist(r.queue_delay_s);
    j["makespan_s"] = r.makespan_s;
    j["utilization"] = r.utilization;
    if (r.fragmentation_ratio >= 0) {
      j["fragmentation_ratio"] = r.fragmentation_ratio;
      j["fragmented_gpu_share"] = r.fragmented_gpu_share;
    }
    if (r.mode == "replay") {
      j["pending_mean_s"] = Stat(r.pending_s, r.pending_s.mean);
      j["pending_s"] = Dist(r.pending_s);
      j["tenants"] = Tenants(r.tenants);
      if (!r.budgets.empty()) j["budgets"] = Budgets(r.budgets);
    }
    if (r.workflows.total > 0) {
      j["workflows"] = r.workflows.total;
      j["workflows_succeeded"] = r.workflows.succeeded;
      j["workflows_failed"] = r.workflows.failed;
      j["workflows_unfinished"] = r.workflows.unfinished;
      j["workflow_completion_mean_s"] = Stat(r.workflows.completion_s, r.workflows.completion_s.mean);
      j["workflow_completion_p50_s"] = Stat(r.workflows.completion_s, r.workflows.completion_s.p50);
      j["workflow_completion_p95_s"] = Stat(r.workflows.completion_s, r.workflows.completion_s.p95);
      j["workflow_completion_s"] = Dist(r.workflows.completion_s);
    }
    j["preemptions"] = r.preemptions;
    j["gpu_hours_lost"] = r.gpu_hours_lost;
    if (r.failures_on) AddFailureFigures(r, j);
    if (!r.plugin_counters.empty()) {
      nlohmann::json counters = nlohmann::json::object();
      for (const auto& [name, value] : r.plugin_counters) counters[name] = value;
      j["plugin_counters"] = std::move(counters);
    }
    j["decision_log_hash"] = r.decision_log_hash;
    j["decisions"] = r.decisions;
    j["wall_seconds"] = r.wall_seconds;
    if (r.mode == "replay") {
      j["passes"] = r.passes;
      j["pass_mean_ms"] = r.pass_mean_ms;
      j["pass_max_ms"] = r.pass_max_ms;
      j["pending_max"] = r.pending_max;
    }
    j["run"] = RunJson(out);
    j["series"] = {{"allocation_over_time", Series(r.allocation_over_time)},
                   {"queue_length_over_time", Series(r.queue_length_over_time)}};
    arr.push_back(std::move(j));
  }
  return CompactNumberArrays(arr.dump(2));
}

Status WriteJsonReport(const SimulateOutput& out, const std::string& path) {
  std::ofstream f(path);
  if (!f) return NotFound(path + ": cannot write");
  f << ResultsToJson(out) << '\n';
  return f ? Status::Ok() : Unavailable(path + ": write failed");
}

}  // namespace berth::sim
