// Results tables of the HTML report.
#include "berth/sim/report/html_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>

#include "berth/sim/report/svg_plot.h"

namespace berth::sim {
namespace {

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// A numeric column. `value` returns nullopt where the policy has no figure.
struct Column {
  std::string group;  // header of the column group ("" = none)
  std::string header;
  std::string tip;
  std::function<std::optional<double>(const PolicyResult&)> value;
  std::function<std::string(double)> format;
  int better = 0;  // +1 higher is better, -1 lower is better, 0 no ranking
};

// A unit for a group of durations so the column reads in one unit.
struct DurationUnit {
  double seconds;
  const char* name;
};
DurationUnit PickUnit(double max_seconds) {
  if (max_seconds < 120) return {1, "s"};
  if (max_seconds < 2 * 3600) return {60, "min"};
  if (max_seconds < 72 * 3600) return {3600, "h"};
  return {86400, "d"};
}

std::string FormatDuration(double v, DurationUnit u) {
  const double x = v / u.seconds;
  return Fmt(std::fabs(x) >= 100 ? "%.0f" : std::fabs(x) >= 10 ? "%.1f" : "%.2f", x);
}

bool Any(const std::vector<PolicyResult>& rs, const std::function<bool(const PolicyResult&)>& f) {
  return std::any_of(rs.begin(), rs.end(), f);
}
std::string Pct(double v) { return Fmt("%.2f", v); }
std::string Count(double v) { return Thousands(static_cast<int64_t>(std::llround(v))); }

// Allocation, job counts, fragmentation, run facts.
std::vector<Column> PlacementColumns(const std::vector<PolicyResult>& rs) {
  const bool replay = Any(rs, [](const PolicyResult& r) { return r.mode == "replay"; });
  const bool fgd = Any(rs, [](const PolicyResult& r) { return r.mode == "fgd"; });
  std::vector<Column> c;
  c.push_back({"GPU", "allocated %",
               fgd && !replay ? "Allocated GPU share at the end (allocated / capacity)"
                              : "Allocated GPU share (at the end in FGD mode, mean over time in replay)",
               [](const PolicyResult& r) { return std::optional(100.0 * r.gpu_allocation_ratio); }, Pct, +1});
  if (replay) {
    c.push_back({"GPU", "utilization %", "GPU-time used / (capacity x makespan)",
                 [](const PolicyResult& r) {
                   return r.mode == "replay" ? std::optional(100.0 * r.utilization) : std::nullopt;
                 },
                 Pct, +1});
  }
  c.push_back({"Jobs", "placed", "Jobs placed",
               [](const PolicyResult& r) { return std::optional<double>(r.jobs_placed); }, Count, +1});
  c.push_back({"Jobs", "failed", "Jobs dropped or failed",
               [](const PolicyResult& r) { return std::optional<double>(r.jobs_failed); }, Count, -1});
  c.push_back({"Jobs", "never fit", "Jobs no node could ever hold",
               [](const PolicyResult& r) { return std::optional<double>(r.jobs_never_fit); }, Count, 0});
  if (replay) {
    c.push_back({"Jobs", "unfinished", "Jobs pending or running when the run ended",
                 [](const PolicyResult& r) { return std::optional<double>(r.jobs_unfinished); }, Count, -1});
  }
  if (Any(rs, [](const PolicyResult& r) { return r.fragmentation_ratio >= 0; })) {
    c.push_back({"Fragmentation", "% of idle", "Fragmented GPU share of the idle GPUs at the end (FGD's measure)",
                 [](const PolicyResult& r) {
                   return r.fragmentation_ratio >= 0 ? std::optional(100.0 * r.fragmentation_ratio) : std::nullopt;
                 },
                 Pct, -1});
    c.push_back({"Fragmentation", "% of capacity", "Fragmented GPU share of the whole cluster at the end",
                 [](const PolicyResult& r) {
                   return r.fragmented_gpu_share >= 0 ? std::optional(100.0 * r.fragmented_gpu_share)
                                                      : std::nullopt;
                 },
                 Pct, -1});
  }
  c.push_back({"Run", "wall s", "Wall-clock seconds of the run",
               [](const PolicyResult& r) { return std::optional(r.wall_seconds); },
               [](double v) { return Fmt("%.3f", v); }, 0});
  return c;
}

// JCT and queueing-delay distributions, makespan; empty when none measured.
std::vector<Column> TimeColumns(const std::vector<PolicyResult>& rs) {
  std::vector<Column> c;
  auto duration_group = [&](const std::string& group, const Distribution PolicyResult::*d,
                            std::vector<std::pair<std::string, double Distribution::*>> stats) {
    double max_s = 0;
    bool have = false;
    for (const auto& r : rs) {
      if ((r.*d).count == 0) continue;
      have = true;
      for (const auto& st : stats) max_s = std::max(max_s, (r.*d).*(st.second));
    }
    if (!have) return;
    const DurationUnit u = PickUnit(max_s);
    for (const auto& [name, field] : stats) {
      c.push_back({group + " (" + u.name + ")", name, group + " " + name + ", in " + u.name,
                   [d, field](const PolicyResult& r) {
                     return (r.*d).count > 0 ? std::optional((r.*d).*field) : std::nullopt;
                   },
                   [u](double v) { return FormatDuration(v, u); }, -1});
    }
  };
  duration_group("Job completion time", &PolicyResult::jct_s,
                 {{"mean", &Distribution::mean}, {"p50", &Distribution::p50}, {"p95", &Distribution::p95},
                  {"p99", &Distribution::p99}});
  duration_group("Queueing delay", &PolicyResult::queue_delay_s,
                 {{"mean", &Distribution::mean}, {"p50", &Distribution::p50}, {"p99", &Distribution::p99}});
  if (Any(rs, [](const PolicyResult& r) { return r.makespan_s > 0; })) {
    double max_s = 0;
    for (const auto& r : rs) max_s = std::max(max_s, r.makespan_s);
    const DurationUnit u = PickUnit(max_s);
    c.push_back({"Makespan", std::string("(") + u.name + ")", "First submission to last finish",
                 [](const PolicyResult& r) {
                   return r.makespan_s > 0 ? std::optional(r.makespan_s) : std::nullopt;
                 },
                 [u](double v) { return FormatDuration(v, u); }, -1});
  }
  return c;
}

// A table of `cols` per policy, with the decision-log hash last if `with_hash`.
std::string Table(const std::vector<PolicyResult>& rs, const std::vector<Column>& cols, bool with_hash) {
  std::string h = "<div class=\"tablewrap\"><table><thead><tr class=\"groups\"><th></th>";
  for (size_t i = 0; i < cols.size();) {
    size_t j = i;
    while (j < cols.size() && cols[j].group == cols[i].group) ++j;
    // The last group (Run) also covers the hash column.
    const size_t span = j - i + (with_hash && j == cols.size() ? 1 : 0);
    h += "<th colspan=\"" + std::to_string(span) + "\">" + EscapeXml(cols[i].group) + "</th>";
    i = j;
  }
  h += "</tr><tr><th class=\"left\">policy</th>";
  for (const auto& c : cols) h += "<th title=\"" + EscapeXml(c.tip) + "\">" + EscapeXml(c.header) + "</th>";
  if (with_hash) h += "<th class=\"left\">decision-log hash</th>";
  h += "</tr></thead><tbody>";

  // Best value per column, when the column ranks and its values differ.
  std::vector<std::optional<double>> best(cols.size());
  for (size_t i = 0; i < cols.size(); ++i) {
    if (cols[i].better == 0 || rs.size() < 2) continue;
    std::optional<double> lo, hi;
    for (const auto& r : rs) {
      auto v = cols[i].value(r);
      if (!v) continue;
      lo = lo ? std::min(*lo, *v) : *v;
      hi = hi ? std::max(*hi, *v) : *v;
    }
    // Compare as printed, so equal-looking values are not singled out.
    if (lo && hi && cols[i].format(*lo) != cols[i].format(*hi)) best[i] = cols[i].better > 0 ? hi : lo;
  }
  for (size_t p = 0; p < rs.size(); ++p) {
    const PolicyResult& r = rs[p];
    h += "<tr><td class=\"left\"><span class=\"swatch\" style=\"background:";
    h += SeriesColor(p);
    h += "\"></span>";
    h += EscapeXml(r.policy);
    h += "</td>";
    for (size_t i = 0; i < cols.size(); ++i) {
      auto v = cols[i].value(r);
      if (!v) {
        h += "<td class=\"num na\">&#8212;</td>";
        continue;
      }
      const std::string text = cols[i].format(*v);
      const bool is_best = best[i] && cols[i].format(*best[i]) == text;
      h += "<td class=\"num";
      if (is_best) h += " best";
      h += "\">";
      h += EscapeXml(text);
      h += "</td>";
    }
    if (with_hash) h += "<td class=\"left hash\">" + EscapeXml(r.decision_log_hash) + "</td>";
    h += "</tr>";
  }
  h += "</tbody></table></div>";
  return h;
}

}  // namespace

std::string Thousands(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return v < 0 ? "-" + out : out;
}

std::string PlacementTable(const std::vector<PolicyResult>& rs) { return Table(rs, PlacementColumns(rs), true); }

std::string TimingTable(const std::vector<PolicyResult>& rs) {
  const std::vector<Column> cols = TimeColumns(rs);
  return cols.empty() ? "" : Table(rs, cols, false);
}

}  // namespace berth::sim
