// HTML report writer: page layout, results table, charts.
#include "berth/sim/report/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>

#include "berth/sim/report/downsample.h"
#include "berth/sim/report/svg_plot.h"

namespace berth::sim {
namespace {

constexpr size_t kMaxPlotPoints = 1000;

constexpr const char* kCss = R"css(
:root{--fg:#111827;--muted:#6b7280;--line:#e5e7eb;--bg:#f9fafb;--card:#fff;--accent:#4e79a7}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif}
main{max-width:1280px;margin:0 auto;padding:32px 24px 48px}
h1{font-size:26px;margin:0 0 4px;letter-spacing:-.01em}
h2{font-size:18px;margin:36px 0 12px}
h3.table-title{font-size:14px;margin:20px 0 8px;color:#374151}
.sub{color:var(--muted);margin:0}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(300px,1fr));gap:12px;margin-top:24px}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:14px 16px}
.card h3{font-size:12px;text-transform:uppercase;letter-spacing:.06em;color:var(--muted);margin:0 0 6px}
.card .big{font-size:16px;font-weight:600;margin:0 0 6px}
.chips{display:flex;flex-wrap:wrap;gap:6px;margin:0;padding:0;list-style:none}
.chips li{background:#f3f4f6;border-radius:4px;padding:1px 7px;font-size:12px;color:#374151}
.tablewrap{overflow-x:auto;background:var(--card);border:1px solid var(--line);border-radius:8px}
table{border-collapse:collapse;width:100%;font-size:12.5px}
th,td{padding:7px 8px;border-bottom:1px solid var(--line);white-space:nowrap}
thead th{white-space:normal;vertical-align:bottom;line-height:1.25}
thead th{background:#f3f4f6;font-weight:600;text-align:right;color:#374151}
thead tr.groups th{text-align:center;font-size:11px;text-transform:uppercase;letter-spacing:.05em;color:var(--muted);border-bottom:none}
thead th.left,td.left{text-align:left}
tbody tr:last-child td{border-bottom:none}
tbody tr:hover{background:#f9fafb}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.best{font-weight:700;color:#065f46}
td.na{color:#9ca3af}
td.hash{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:11.5px;color:#374151}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:8px;vertical-align:baseline}
.note{color:var(--muted);font-size:12px;margin:8px 2px 0}
figure{margin:0 0 16px;background:var(--card);border:1px solid var(--line);border-radius:8px;padding:12px 12px 8px}
figure svg{display:block;width:100%;height:auto}
figcaption{color:var(--muted);font-size:12px;margin:4px 8px 4px}
footer{margin-top:40px;color:var(--muted);font-size:12px;border-top:1px solid var(--line);padding-top:12px}
)css";

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string Thousands(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return v < 0 ? "-" + out : out;
}

std::vector<std::string> SplitOn(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    size_t next = s.find(sep, pos);
    out.push_back(s.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    if (next == std::string::npos) break;
    pos = next + sep.size();
  }
  return out;
}

// ---- Results table ---------------------------------------------------------

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
std::string ResultsTable(const std::vector<PolicyResult>& rs, const std::vector<Column>& cols, bool with_hash) {
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

// ---- Charts -----------------------------------------------------------------

std::string Figure(const std::string& svg, const std::string& caption) {
  return "<figure>" + svg + "<figcaption>" + EscapeXml(caption) + "</figcaption></figure>";
}

// FGD mode: the arrived share (x) from which some policy leaves demand
// unplaced (allocation more than half a point below min(x, 100)); NaN if none.
double DivergenceX(const std::vector<PolicyResult>& rs) {
  double first = std::numeric_limits<double>::quiet_NaN();
  for (const auto& r : rs) {
    if (r.mode != "fgd") continue;
    for (const Point& p : r.allocation_over_time) {
      if (!std::isfinite(p.x) || !std::isfinite(p.y) || std::min(p.x, 100.0) - p.y <= 0.5) continue;
      if (!(p.x >= first)) first = p.x;
      break;
    }
  }
  return first;
}

// Allocation over time: one chart per mode present (x differs by mode). In
// FGD mode a second, zoomed chart shows where the policies part ways.
std::string AllocationCharts(const std::vector<PolicyResult>& rs) {
  std::string out;
  for (const std::string mode : {"fgd", "replay"}) {
    LineChart c;
    c.id = "alloc-" + mode;
    double max_x = 0;
    for (size_t p = 0; p < rs.size(); ++p) {
      if (rs[p].mode != mode || rs[p].allocation_over_time.empty()) continue;
      c.series.push_back({rs[p].policy, Downsample(rs[p].allocation_over_time, kMaxPlotPoints), p});
      for (const Point& pt : rs[p].allocation_over_time)
        if (std::isfinite(pt.x)) max_x = std::max(max_x, pt.x);
    }
    if (c.series.empty()) continue;
    c.y.label = "Allocated GPUs (% of capacity)";
    c.y.min = 0;
    c.y.max = 100;
    c.y.suffix = "%";
    c.x.min = 0;
    if (mode == "replay") {
      c.title = "GPU allocation over time";
      c.x.label = "Simulated time (hours)";
      out += Figure(RenderLineChart(c), "Share of GPU capacity allocated to running jobs over simulated time.");
      continue;
    }
    c.title = "GPU allocation as demand arrives";
    c.x.label = "Arrived GPU demand (% of cluster capacity)";
    c.x.suffix = "%";
    c.x.max = max_x;  // the axis ends where the arrivals end
    const double top = std::min(100.0, max_x);
    c.guides.push_back({"every pod placed", {{0, 0}, {top, top}}});
    out += Figure(RenderLineChart(c),
                  "FGD protocol: pods arrive one by one and never finish; each point is the allocated share of GPU "
                  "capacity once the arrived demand has reached x% of capacity. The dashed line is the ceiling "
                  "reached when every arrived pod is placed; the gap below it is demand that could not be placed.");
    // Detail from a little before the first policy falls behind.
    const double split = DivergenceX(rs);
    if (!std::isfinite(split) || split <= 0 || split >= max_x) continue;
    const double from = std::max(0.0, std::floor((split - 0.25 * (max_x - split)) / 5) * 5);
    LineChart z = c;
    z.id = "alloc-fgd-detail";
    z.title = "GPU allocation at high load (detail)";
    z.height = 320;
    z.x.min = from;
    z.y.min = z.y.max = std::numeric_limits<double>::quiet_NaN();
    for (auto& series : z.series) {
      std::erase_if(series.points, [from](const Point& p) { return p.x < from; });
    }
    out += Figure(RenderLineChart(z), "The same curves from " + FormatTick(from) +
                                          "% of capacity arrived, where the policies part ways; the y axis is "
                                          "scaled to the data.");
  }
  return out;
}

// "Policies bestfit, sjf and fifo made identical decisions ..." for groups of
// equal decision-log hashes ("" if none).
std::string IdenticalRunsNote(const std::vector<PolicyResult>& rs) {
  std::string note;
  std::vector<bool> done(rs.size(), false);
  for (size_t i = 0; i < rs.size(); ++i) {
    if (done[i] || rs[i].decision_log_hash.empty()) continue;
    std::vector<std::string> same = {rs[i].policy};
    for (size_t j = i + 1; j < rs.size(); ++j) {
      if (!done[j] && rs[j].decision_log_hash == rs[i].decision_log_hash) {
        same.push_back(rs[j].policy);
        done[j] = true;
      }
    }
    if (same.size() < 2) continue;
    std::string names;
    for (size_t k = 0; k < same.size(); ++k)
      names += (k == 0 ? "" : k + 1 == same.size() ? " and " : ", ") + same[k];
    note += (note.empty() ? "" : " ") + names + " made identical decisions (same decision-log hash): their lines "
            "coincide, and the one drawn last shows.";
  }
  return note;
}

std::string QueueChart(const std::vector<PolicyResult>& rs) {
  LineChart c;
  c.id = "queue";
  for (size_t p = 0; p < rs.size(); ++p) {
    if (rs[p].queue_length_over_time.empty()) continue;
    c.series.push_back({rs[p].policy, Downsample(rs[p].queue_length_over_time, kMaxPlotPoints), p});
  }
  if (c.series.empty()) return "";
  c.title = "Queue length over time";
  c.x.label = "Simulated time (hours)";
  c.x.min = 0;
  c.y.label = "Pending jobs";
  c.y.min = 0;
  c.step = true;
  return Figure(RenderLineChart(c), "Jobs waiting to be placed over simulated time.");
}

std::string JctChart(const std::vector<PolicyResult>& rs) {
  std::vector<CdfSample> samples;
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (size_t p = 0; p < rs.size(); ++p) {
    if (rs[p].jcts_s.empty()) continue;
    samples.push_back({rs[p].policy, rs[p].jcts_s, p});
    for (double v : rs[p].jcts_s) {
      if (!std::isfinite(v) || v <= 0) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (samples.empty()) return "";
  PlotAxis x;
  x.log_scale = hi > 0 && hi / lo >= 100;
  x.label = x.log_scale ? "Job completion time (seconds, log scale)" : "Job completion time (seconds)";
  if (!x.log_scale) x.min = 0;
  return Figure(RenderCdfChart("jct-cdf", "Job completion time (CDF)", x, samples, kMaxPlotPoints),
                "Share of finished jobs whose completion time (finish - submit) is at most x. Curves further "
                "left and higher are better.");
}

// ---- Page ------------------------------------------------------------------

std::string ModeText(const PolicyResult& r) {
  if (r.mode == "fgd") return "FGD protocol, load " + Fmt("%.2f", r.load) + "\xC3\x97 capacity";
  if (r.mode == "replay") return "trace replay";
  return r.mode;
}

std::string SetupCards(const SimulateOutput& out) {
  std::string h = "<section class=\"cards\">";
  {
    const std::vector<std::string> parts = SplitOn(out.cluster_summary, "; ");
    h += "<div class=\"card\"><h3>Cluster</h3><p class=\"big\">" + EscapeXml(parts.front()) + "</p>";
    if (parts.size() > 1) {
      h += "<ul class=\"chips\">";
      for (size_t i = 1; i < parts.size(); ++i) h += "<li>" + EscapeXml(parts[i]) + "</li>";
      h += "</ul>";
    }
    h += "</div>";
  }
  h += "<div class=\"card\"><h3>Trace</h3><p class=\"big\">" + EscapeXml(out.trace_name) + "</p><p class=\"sub\">" +
       EscapeXml(out.trace_summary) + "</p></div>";
  if (!out.results.empty()) {
    const PolicyResult& r0 = out.results.front();
    h += "<div class=\"card\"><h3>Run</h3><p class=\"big\">" + EscapeXml(ModeText(r0)) + "</p><p class=\"sub\">seed " +
         std::to_string(r0.seed) + " &#183; " + std::to_string(out.results.size()) +
         (out.results.size() == 1 ? " policy" : " policies") + " &#183; " +
         Thousands(r0.jobs_total) + (r0.mode == "fgd" ? " pod arrivals" : " jobs") + " &#183; capacity " + Thousands(r0.capacity_milli_gpu / 1000) +
         " GPUs</p></div>";
  }
  h += "</section>";
  return h;
}

}  // namespace

std::string RenderHtmlReport(const SimulateOutput& out) {
  const std::vector<PolicyResult>& rs = out.results;
  std::string names;
  for (size_t i = 0; i < rs.size() && i < 8; ++i) names += (i ? ", " : "") + rs[i].policy;
  if (rs.size() > 8) names += ", ...";

  std::string h;
  h.reserve(64 * 1024);
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
       "<meta name=\"generator\" content=\"berth simulate\">\n<title>Berth simulation report";
  if (!out.trace_name.empty()) h += " \xE2\x80\x94 " + EscapeXml(out.trace_name);
  h += "</title>\n<style>" + std::string(kCss) + "</style>\n</head>\n<body>\n<main>\n";
  h += "<header><h1>Simulation report</h1><p class=\"sub\">" + EscapeXml(out.trace_name) +
       (names.empty() ? "" : " \xC2\xB7 " + EscapeXml(names)) + "</p></header>\n";
  h += SetupCards(out) + "\n";

  h += "<h2>Results by policy</h2>\n";
  if (rs.empty()) {
    h += "<p class=\"note\">No policy was run.</p>\n";
  } else {
    h += ResultsTable(rs, PlacementColumns(rs), true) + "\n";
    const std::vector<Column> time = TimeColumns(rs);
    if (!time.empty()) h += "<h3 class=\"table-title\">Timing</h3>\n" + ResultsTable(rs, time, false) + "\n";
    h += "<p class=\"note\">Bold: the best value in its column. &#8212;: not measured for that policy. Columns with "
         "no data in this run are left out. Equal decision-log hashes mean identical decisions.</p>\n";
  }

  std::string charts = AllocationCharts(rs) + QueueChart(rs) + JctChart(rs);
  if (!charts.empty()) {
    h += "<h2>Plots</h2>\n";
    const std::string same = IdenticalRunsNote(rs);
    if (!same.empty()) h += "<p class=\"note\">" + EscapeXml(same) + "</p>\n";
    h += charts + "\n";
  }

  h += "<footer>Generated by <code>berth simulate</code>. The same inputs and seed give the same decision-log "
       "hash.</footer>\n</main>\n</body>\n</html>\n";
  return h;
}

Status WriteHtmlReport(const SimulateOutput& out, const std::string& path) {
  std::ofstream f(path, std::ios::binary);
  if (!f) return NotFound(path + ": cannot write");
  f << RenderHtmlReport(out);
  f.flush();
  return f ? Status::Ok() : Unavailable(path + ": write failed");
}

}  // namespace berth::sim
