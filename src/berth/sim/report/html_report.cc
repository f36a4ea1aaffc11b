// HTML report writer: page layout and charts (tables in html_table.cc).
#include "berth/sim/report/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>

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
      out += Figure(RenderLineChart(c), "Share of GPU capacity allocated to running jobs over simulated time.");
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
    h += PlacementTable(rs) + "\n";
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
