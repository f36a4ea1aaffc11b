// Plain-text summary.
#include "berth/sim/report/text_report.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace berth::sim {
namespace {

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

struct TextColumn {
  TextColumn(std::string h, bool l = false) : header(std::move(h)), left(l) {}  // NOLINT
  std::string header;
  bool left = false;
  std::vector<std::string> cells;
};

// Aligned columns: header, rule, one line per cell row.
std::string Render(const std::vector<TextColumn>& cols) {
  std::vector<size_t> width;
  for (const auto& c : cols) {
    size_t w = c.header.size();
    for (const auto& cell : c.cells) w = std::max(w, cell.size());
    width.push_back(w);
  }
  auto row = [&](auto cell_of) {
    std::string line;
    for (size_t i = 0; i < cols.size(); ++i) {
      const std::string cell = cell_of(i);
      const std::string pad(width[i] - std::min(width[i], cell.size()), ' ');
      if (i > 0) line += "  ";
      if (cols[i].left) line += cell + (i + 1 < cols.size() ? pad : "");
      else line += pad + cell;
    }
    return line + "\n";
  };
  std::string s = row([&](size_t i) { return cols[i].header; });
  s += row([&](size_t i) { return std::string(width[i], '-'); });
  const size_t rows = cols.empty() ? 0 : cols[0].cells.size();
  for (size_t p = 0; p < rows; ++p) s += row([&](size_t i) { return cols[i].cells[p]; });
  return s;
}

constexpr size_t kMaxTenantRows = 20;  // per policy; the JSON has them all

// Per-tenant figures of replay runs with two tenants or more ("" otherwise).
std::string TenantSection(const std::vector<PolicyResult>& rs) {
  std::vector<TextColumn> cols = {{"policy", true},  {"tenant", true}, {"jobs"},       {"done"},
                                  {"jct_mean_s"},    {"jct_p99_s"},    {"queue_mean_s"}, {"queue_p99_s"},
                                  {"share%"},        {"guarantee%"},   {"norm_share%"}, {"entitled%"},  {"rho_mean"}, {"rho_max"},
                                  {"preempted"},     {"gpu_h_lost"}};
  size_t hidden = 0;
  for (const auto& r : rs) {
    if (r.mode != "replay" || r.tenants.size() < 2) continue;
    for (size_t k = 0; k < r.tenants.size(); ++k) {
      if (k >= kMaxTenantRows) {
        hidden += r.tenants.size() - k;
        break;
      }
      const TenantResult& t = r.tenants[k];
      size_t i = 0;
      cols[i++].cells.push_back(r.policy);
      cols[i++].cells.push_back(t.tenant.empty() ? "(none)" : t.tenant);
      cols[i++].cells.push_back(std::to_string(t.jobs));
      cols[i++].cells.push_back(std::to_string(t.jobs_finished));
      cols[i++].cells.push_back(t.jct_s.count > 0 ? Fmt("%.1f", t.jct_s.mean) : "-");
      cols[i++].cells.push_back(t.jct_s.count > 0 ? Fmt("%.0f", t.jct_s.p99) : "-");
      cols[i++].cells.push_back(t.queue_delay_s.count > 0 ? Fmt("%.1f", t.queue_delay_s.mean) : "-");
      cols[i++].cells.push_back(t.queue_delay_s.count > 0 ? Fmt("%.0f", t.queue_delay_s.p99) : "-");
      cols[i++].cells.push_back(Fmt("%.2f", 100.0 * t.gpu_share));
      cols[i++].cells.push_back(Fmt("%.2f", 100.0 * t.guarantee_share));
      cols[i++].cells.push_back(t.normalized_share >= 0 ? Fmt("%.2f", 100.0 * t.normalized_share) : "-");
      cols[i++].cells.push_back(t.entitled_share >= 0 ? Fmt("%.2f", 100.0 * t.entitled_share) : "-");
      cols[i++].cells.push_back(t.rho.count > 0 ? Fmt("%.2f", t.rho.mean) : "-");
      cols[i++].cells.push_back(t.rho.count > 0 ? Fmt("%.1f", t.rho.max) : "-");
      cols[i++].cells.push_back(std::to_string(t.preemptions));
      cols[i++].cells.push_back(Fmt("%.1f", t.gpu_hours_lost));
    }
  }
  if (cols[0].cells.empty()) return "";
  // entitled% only with a reachable entitlement (queue file `entitlement: reachable`).
  const auto entitled = std::find_if(cols.begin(), cols.end(), [](const TextColumn& c) { return c.header == "entitled%"; });
  if (std::all_of(entitled->cells.begin(), entitled->cells.end(), [](const std::string& c) { return c == "-"; }))
    cols.erase(entitled);
  std::string s = "\nper tenant\n" + Render(cols);
  if (hidden > 0) s += "(" + std::to_string(hidden) + " more tenant rows in the JSON report)\n";
  return s;
}

// Queues with a budget: spend, starts and evictions by capacity class, budget waits.
std::string BudgetSection(const std::vector<PolicyResult>& rs) {
  std::vector<TextColumn> cols = {{"policy", true}, {"queue", true}, {"budget", true}, {"spent"},
                                  {"this period"}, {"starts"}, {"best-effort"}, {"over-budget"},
                                  {"evicted"}, {"evicted b-e"}, {"waited"}};
  for (const PolicyResult& r : rs) {
    for (const BudgetResult& b : r.budgets) {
      size_t i = 0;
      cols[i++].cells.push_back(r.policy);
      cols[i++].cells.push_back(b.queue);
      cols[i++].cells.push_back(Fmt("%.1f", b.amount) + " " + b.unit + "/" + b.period + " (" + b.when_spent + ")");
      cols[i++].cells.push_back(Fmt("%.1f", b.spent_total));
      cols[i++].cells.push_back(Fmt("%.1f", b.spent_period) + (b.exhausted_at_end ? " (spent)" : ""));
      cols[i++].cells.push_back(std::to_string(b.starts));
      cols[i++].cells.push_back(std::to_string(b.best_effort_starts));
      cols[i++].cells.push_back(std::to_string(b.over_budget_starts));
      cols[i++].cells.push_back(std::to_string(b.evictions));
      cols[i++].cells.push_back(std::to_string(b.best_effort_evictions));
      cols[i++].cells.push_back(std::to_string(b.jobs_waited_for_budget));
    }
  }
  if (cols[0].cells.empty()) return "";
  return "\nbudgets\n" + Render(cols);
}

// With --failures: goodput, effective training time and what the failures cost, per policy.
std::string FailureSection(const std::vector<PolicyResult>& rs) {
  if (std::none_of(rs.begin(), rs.end(), [](const PolicyResult& r) { return r.failures_on; })) return "";
  std::vector<TextColumn> cols = {{"policy", true}, {"repair", true}, {"spares"},   {"faults"},
                                  {"interrupted"},  {"restarts"},     {"repairs"},  {"goodput"},
                                  {"ett_large"},    {"gpu_h_failed"}, {"gpu_h_recovery"}, {"spare_lent"}, {"jobs_lost"}};
  for (const auto& r : rs) {
    if (!r.failures_on) continue;
    int64_t faults = 0, hit = 0;
    for (const auto& [cause, n] : r.failures) faults += n;
    for (const auto& [cause, n] : r.interruptions) hit += n;
    size_t i = 0;
    cols[i++].cells.push_back(r.policy);
    cols[i++].cells.push_back(r.repair_mode);
    cols[i++].cells.push_back(r.spare_mode + " (" + std::to_string(r.spare_nodes) + ")");
    cols[i++].cells.push_back(std::to_string(faults));
    cols[i++].cells.push_back(std::to_string(hit));
    cols[i++].cells.push_back(std::to_string(r.restarts));
    cols[i++].cells.push_back(std::to_string(r.repairs));
    cols[i++].cells.push_back(Fmt("%.4f", r.goodput));
    cols[i++].cells.push_back(r.effective_training_time_large < 0 ? "-" : Fmt("%.4f", r.effective_training_time_large));
    cols[i++].cells.push_back(Fmt("%.1f", r.gpu_hours_lost_failures));
    cols[i++].cells.push_back(Fmt("%.1f", r.gpu_hours_lost_recovery));
    cols[i++].cells.push_back(r.lend_spares ? Fmt("%.1f%%", 100.0 * r.spare_utilization) : "-");
    cols[i++].cells.push_back(std::to_string(r.jobs_lost));
  }
  std::string out = "\nfailures (docs/failures.md)\n" + Render(cols);
  if (out.back() != '\n') out += '\n';
  return out;
}

}  // namespace

std::string FormatTextSummary(const SimulateOutput& out) {
  const auto& rs = out.results;
  std::string s;
  s += "cluster  " + out.cluster_summary + "\n";
  s += "trace    " + out.trace_summary + "\n";
  s += out.trace_skips;
  if (!rs.empty()) {
    const PolicyResult& r0 = rs.front();
    s += "run      ";
    if (r0.mode == "fgd") s += "FGD protocol, load " + Fmt("%.2f", r0.load) + ", ";
    else if (r0.mode == "replay") s += "trace replay, ";
    s += "seed " + std::to_string(r0.seed) + "\n";
  }
  s += "\n";
  if (rs.empty()) return s + "no policy was run\n";

  const bool replay = std::any_of(rs.begin(), rs.end(), [](const PolicyResult& r) { return r.mode == "replay"; });
  std::vector<TextColumn> cols = {{"policy", true},   {"seed"},   {"alloc%"}, {"placed"},       {"failed"},
                                  {"never"},          {"unfinished"}, {"jct_mean_s"}, {"queue_mean_s"}, {"wall_s"},
                                  {"decision_log_hash", true}};
  if (replay) {
    // Replay adds the tails and, when any run preempted, the evictions.
    cols.insert(cols.begin() + 8, TextColumn("jct_p99_s"));
    cols.insert(cols.begin() + 10, TextColumn("queue_p99_s"));
  } else {
    cols.erase(cols.begin() + 6);
  }
  const bool preempted = std::any_of(rs.begin(), rs.end(), [](const PolicyResult& r) { return r.preemptions > 0; });
  if (preempted) cols.insert(cols.end() - 2, {TextColumn("preempted"), TextColumn("gpu_h_lost")});
  for (const auto& r : rs) {
    size_t i = 0;
    cols[i++].cells.push_back(r.policy);
    cols[i++].cells.push_back(std::to_string(r.seed));
    cols[i++].cells.push_back(Fmt("%.2f", 100.0 * r.gpu_allocation_ratio));
    cols[i++].cells.push_back(std::to_string(r.jobs_placed));
    cols[i++].cells.push_back(std::to_string(r.jobs_failed));
    cols[i++].cells.push_back(std::to_string(r.jobs_never_fit));
    if (replay) cols[i++].cells.push_back(std::to_string(r.jobs_unfinished));
    cols[i++].cells.push_back(r.jct_s.count > 0 ? Fmt("%.1f", r.jct_s.mean) : "-");
    if (replay) cols[i++].cells.push_back(r.jct_s.count > 0 ? Fmt("%.0f", r.jct_s.p99) : "-");
    cols[i++].cells.push_back(r.queue_delay_s.count > 0 ? Fmt("%.1f", r.queue_delay_s.mean) : "-");
    if (replay) cols[i++].cells.push_back(r.queue_delay_s.count > 0 ? Fmt("%.0f", r.queue_delay_s.p99) : "-");
    if (preempted) {
      cols[i++].cells.push_back(std::to_string(r.preemptions));
      cols[i++].cells.push_back(Fmt("%.1f", r.gpu_hours_lost));
    }
    cols[i++].cells.push_back(Fmt("%.3f", r.wall_seconds));
    cols[i++].cells.push_back(r.decision_log_hash);
  }
  s += Render(cols);

  if (rs.size() > 1) {
    // Ties (as printed) are listed together, in run order.
    double top = 0;
    for (const auto& r : rs) top = std::max(top, r.gpu_allocation_ratio);
    const std::string top_text = Fmt("%.2f", 100.0 * top);
    std::string names;
    for (const auto& r : rs)
      if (Fmt("%.2f", 100.0 * r.gpu_allocation_ratio) == top_text) names += (names.empty() ? "" : ", ") + r.policy;
    s += "\nhighest allocation: " + names + " (" + top_text + "%)\n";
    const PolicyResult* best_jct = nullptr;
    for (const auto& r : rs)
      if (r.jct_s.count > 0 && (!best_jct || r.jct_s.mean < best_jct->jct_s.mean)) best_jct = &r;
    if (best_jct) s += "lowest mean JCT:    " + best_jct->policy + " (" + Fmt("%.1f", best_jct->jct_s.mean) + " s)\n";
  }
  s += TenantSection(rs);
  s += BudgetSection(rs);
  s += FailureSection(rs);
  for (const auto& r : rs) {
    const WorkflowFigures& w = r.workflows;
    if (w.total == 0) continue;
    s += "workflows (" + r.policy + "): " + std::to_string(w.total) + ", " + std::to_string(w.succeeded) +
         " succeeded, " + std::to_string(w.failed) + " failed, " + std::to_string(w.unfinished) +
         " unfinished; completion mean " + Fmt("%.1f", w.completion_s.mean) + " s, p50 " +
         Fmt("%.1f", w.completion_s.p50) + " s, p95 " + Fmt("%.1f", w.completion_s.p95) + " s\n";
  }
  return s;
}

}  // namespace berth::sim
