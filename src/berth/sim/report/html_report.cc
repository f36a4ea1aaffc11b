// HTML report writer: page layout and charts (tables in html_table.cc).
#include "berth/sim/report/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>

#include "berth/sim/report/bar_chart.h"
#include "berth/sim/report/downsample.h"
#include "berth/sim/report/html_table.h"
#include "berth/sim/report/svg_plot.h"

namespace berth::sim {
namespace {

constexpr size_t kMaxPlotPoints = 1000;

constexpr const char* kCss = R"css(
:root{--fg:#111827;--muted:#6b7280;--line:#e5e7eb;--bg:#f9fafb;--card:#fff}
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
thead th{white-space:normal;vertical-align:bottom;line-height:1.25;background:#f3f4f6;font-weight:600;text-align:right;color:#374151}
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
.runinfo dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0;background:var(--card);border:1px solid var(--line);border-radius:8px;padding:12px 16px}
.runinfo dt{color:var(--muted)}
.runinfo dd{margin:0;overflow-wrap:anywhere}
.runinfo code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
footer{margin-top:40px;color:var(--muted);font-size:12px;border-top:1px solid var(--line);padding-top:12px}
)css";

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
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

// FGD detail: the y (and x) range of the zoomed chart, from a little below
// the lowest final allocation to a little above the highest (at most 100).
struct DetailRange {
  double lo, hi;              // axis bounds, %
  double final_lo, final_hi;  // the lowest and highest final allocation, %
};
std::optional<DetailRange> FgdDetailRange(const std::vector<PolicyResult>& rs) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& r : rs) {
    if (r.mode != "fgd") continue;
    for (auto it = r.allocation_over_time.rbegin(); it != r.allocation_over_time.rend(); ++it) {
      if (!std::isfinite(it->y)) continue;
      lo = std::min(lo, it->y);
      hi = std::max(hi, it->y);
      break;
    }
  }
  if (!(lo <= hi)) return std::nullopt;
  const double spread = std::max(hi - lo, 1.0);
  DetailRange d{std::max(0.0, std::floor(lo - spread)), std::min(100.0, std::ceil(hi + spread / 2)), lo, hi};
  if (d.hi <= d.lo) d.hi = d.lo + 1;
  return d;
}

// The value of a series (points in x order) at x: the last point at or
// before x, NaN before the first.
double StepAt(const std::vector<Point>& pts, double x) {
  auto it = std::upper_bound(pts.begin(), pts.end(), x, [](double v, const Point& p) { return v < p.x; });
  return it == pts.begin() ? std::numeric_limits<double>::quiet_NaN() : std::prev(it)->y;
}

// " Curves that coincide: a and b (within 0.05 points everywhere); the one
// drawn last hides the others." for groups of series whose values differ by
// at most `tol` at every one of 500 sample points of the common x range ("" if
// none).
std::string CoincidingNote(const std::vector<PlotSeries>& series, double tol, const char* unit) {
  constexpr int kSamples = 500;
  auto range = [](const PlotSeries& s) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const Point& p : s.points)
      if (std::isfinite(p.x)) lo = std::min(lo, p.x), hi = std::max(hi, p.x);
    return std::pair{lo, hi};
  };
  auto same = [&](const PlotSeries& a, const PlotSeries& b) {
    const auto [alo, ahi] = range(a);
    const auto [blo, bhi] = range(b);
    if (!(alo <= ahi) || !(blo <= bhi) || std::fabs(ahi - bhi) > 1e-9 * std::max(1.0, std::fabs(ahi))) return false;
    const double lo = std::max(alo, blo), hi = ahi;
    for (int k = 0; k <= kSamples; ++k) {
      const double x = lo + (hi - lo) * k / kSamples;
      const double ya = StepAt(a.points, x), yb = StepAt(b.points, x);
      if (std::isfinite(ya) != std::isfinite(yb)) return false;
      if (std::isfinite(ya) && std::fabs(ya - yb) > tol) return false;
    }
    return true;
  };
  std::string note;
  std::vector<bool> done(series.size(), false);
  for (size_t i = 0; i < series.size(); ++i) {
    if (done[i]) continue;
    std::vector<std::string> group = {series[i].name};
    for (size_t j = i + 1; j < series.size(); ++j)
      if (!done[j] && same(series[i], series[j])) {
        group.push_back(series[j].name);
        done[j] = true;
      }
    if (group.size() < 2) continue;
    std::string names;
    for (size_t k = 0; k < group.size(); ++k)
      names += (k == 0 ? "" : k + 1 == group.size() ? " and " : ", ") + group[k];
    note += (note.empty() ? "" : "; ") + names;
  }
  if (note.empty()) return "";
  return " Curves that coincide: " + note + " (within " + FormatTick(tol) + " " + unit +
         " everywhere); the one drawn last hides the others.";
}

// The final GPU allocation of every policy, one bar each.
std::string FinalAllocationChart(const std::vector<PolicyResult>& rs) {
  if (rs.empty()) return "";
  BarChart c;
  c.id = "final-alloc";
  c.title = "GPU allocation by policy";
  const bool fgd = std::all_of(rs.begin(), rs.end(), [](const PolicyResult& r) { return r.mode == "fgd"; });
  c.axis.label = fgd ? "Allocated GPUs at the end (% of capacity)" : "Allocated GPUs (% of capacity; mean over time in replay)";
  c.axis.min = 0;
  c.axis.max = 100;
  c.axis.suffix = "%";
  for (size_t p = 0; p < rs.size(); ++p) c.bars.push_back({rs[p].policy, 100.0 * rs[p].gpu_allocation_ratio, p});
  return Figure(RenderBarChart(c), fgd ? "Share of GPU capacity allocated when the last pod has arrived, per policy."
                                       : "GPU allocation per policy: at the end in FGD mode, the time mean in replay.");
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
    c.y.suffix = std::string(1, '%');
    c.x.min = 0;
    if (mode == "replay") {
      c.title = "GPU allocation over time";
      c.x.label = "Simulated time (hours)";
      out += Figure(RenderLineChart(c), "Share of GPU capacity allocated to running jobs over simulated time." +
                                            CoincidingNote(c.series, 0.05, "points"));
      continue;
    }
    c.title = "GPU allocation as demand arrives";
    c.x.label = "Arrived GPU demand (% of cluster capacity)";
    c.x.suffix = std::string(1, '%');
    c.x.max = max_x;  // the axis ends where the arrivals end
    const double top = std::min(100.0, max_x);
    c.guides.push_back({"every pod placed", {{0, 0}, {top, top}}});
    out += Figure(RenderLineChart(c),
                  "FGD protocol: pods arrive one by one and never finish; each point is the allocated share of GPU "
                  "capacity once the arrived demand has reached x% of capacity. The dashed line is the ceiling "
                  "reached when every arrived pod is placed; the gap below it is demand that could not be placed." +
                      CoincidingNote(c.series, 0.05, "points"));
    // Detail where the policies part ways, its y range fitted to the final
    // allocations so a band of a few points fills the plot.
    const double split = DivergenceX(rs);
    const std::optional<DetailRange> range = FgdDetailRange(rs);
    if (!std::isfinite(split) || split <= 0 || split >= max_x || !range) continue;
    LineChart z = c;
    z.id = "alloc-fgd-detail";
    z.title = "GPU allocation at high load (detail)";
    z.height = 320;
    z.x.min = range->lo;
    z.y.min = range->lo;
    z.y.max = range->hi;
    for (auto& series : z.series) {
      std::erase_if(series.points, [&range](const Point& p) { return p.x < range->lo; });
    }
    out += Figure(RenderLineChart(z), "The same curves zoomed on the results: y from " + FormatTick(range->lo) +
                                          "% to " + FormatTick(range->hi) + "% allocated, x from " +
                                          FormatTick(range->lo) + "% of capacity arrived; final allocations " +
                                          Fmt("%.2f", range->final_lo) + "% to " + Fmt("%.2f", range->final_hi) +
                                          "%." + CoincidingNote(c.series, 0.05, "points"));
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
  return Figure(RenderLineChart(c), "Jobs waiting to be placed over simulated time." +
                                        CoincidingNote(c.series, 0.5, "jobs"));
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

// Version, commit, cluster and the exact command line.
std::string RunInfoSection(const RunInfo& run) {
  if (run.berth_version.empty() && run.command_line.empty() && run.cluster.empty()) return "";
  std::string h = "<section class=\"runinfo\" id=\"run-info\"><h2>Run</h2><dl>";
  auto row = [&h](const char* term, const std::string& v, bool code) {
    if (v.empty()) return;
    h += std::string("<dt>") + term + "</dt><dd>" + (code ? "<code>" : "") + EscapeXml(v) + (code ? "</code>" : "") +
         "</dd>";
  };
  row("Berth version", run.berth_version, false);
  row("Git commit", run.git_commit, true);
  row("Build type", run.build_type, false);
  row("Cluster", run.cluster, true);
  row("Command line", run.command_line, true);
  h += "</dl></section>";
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
  const std::string run_info = RunInfoSection(out.run);
  if (!run_info.empty()) h += run_info + "\n";

  h += "<h2>Results by policy</h2>\n";
  if (rs.empty()) {
    h += "<p class=\"note\">No policy was run.</p>\n";
  } else {
    h += PlacementTable(rs) + "\n";
    if (std::any_of(rs.begin(), rs.end(), [](const PolicyResult& r) { return r.fragmentation_ratio >= 0; }))
      h += "<p class=\"note\" id=\"fragmentation-defs\">Fragmentation (FGD's measure, Weng et al., ATC'23), at the "
           "end of the run: a node's fragmented GPUs are its idle GPU capacity that the typical pods of the trace, "
           "weighted by how often they occur, could not use (too little free on a GPU, too few GPUs, no CPU left, "
           "or the wrong GPU type). <b>% of idle</b>: fragmented / idle GPU capacity (how much of what is left is "
           "unusable). <b>% of capacity</b>: fragmented / all GPU capacity of the cluster.</p>\n";
    const std::string timing = TimingTable(rs);
    if (!timing.empty()) h += "<h3 class=\"table-title\">Timing</h3>\n" + timing + "\n";
    const std::string tenants = TenantTable(rs);
    if (!tenants.empty()) {
      h += "<h3 class=\"table-title\">Per tenant</h3>\n" + tenants + "\n";
      h += "<p class=\"note\">GPU share: time-mean share of the cluster's GPUs held by the tenant's jobs; guarantee: "
           "its queue's guaranteed share. &#961;: finish-time fairness, JCT / JCT alone on the tenant's fair share "
           "(1 = as if alone).</p>\n";
    }
    h += "<p class=\"note\">Bold: the best value in its column. &#8212;: not measured for that policy. Columns with "
         "no data in this run are left out. Equal decision-log hashes mean identical decisions.</p>\n";
  }

  std::string charts = FinalAllocationChart(rs) + AllocationCharts(rs) + QueueChart(rs) + JctChart(rs);
  if (!charts.empty()) {
    h += "<h2>Plots</h2>\n";
    const std::string same = IdenticalRunsNote(rs);
    if (!same.empty()) h += "<p class=\"note\">" + EscapeXml(same) + "</p>\n";
    h += charts + "\n";
  }

  h += "<footer>Generated by <code>berth simulate</code>" +
       (out.run.berth_version.empty() ? std::string()
                                      : " " + EscapeXml(out.run.berth_version) +
                                            (out.run.git_commit.empty() ? "" : " (commit " + EscapeXml(out.run.git_commit) + ")")) +
       ". The same inputs and seed give the same decision-log "
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
