// The per-tenant table of the HTML report.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "berth/sim/report/html_table.h"
#include "berth/sim/report/svg_plot.h"

namespace berth::sim {
namespace {

constexpr size_t kMaxTenants = 30;

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

// Each duration in its own unit, with about three significant digits: tenants
// of one table range from seconds to days, and one unit for all would print
// most cells as 0.00.
std::string FormatSeconds(double s) {
  if (!std::isfinite(s)) return "\xE2\x80\x94";
  if (s == 0) return "0 s";
  const double a = std::fabs(s);
  const auto [unit_s, unit] = a < 120              ? std::pair{1.0, "s"}
                              : a < 2 * 3600       ? std::pair{60.0, "min"}
                              : a < 72 * 3600      ? std::pair{3600.0, "h"}
                                                   : std::pair{86400.0, "d"};
  const double x = s / unit_s;
  const double ax = std::fabs(x);
  return Fmt(ax >= 100 ? "%.0f" : ax >= 10 ? "%.1f" : ax >= 0.1 ? "%.2f" : "%.3f", x) + " " + unit;
}

namespace {

std::string Cell(const std::string& text, bool na = false) {
  return std::string("<td class=\"num") + (na ? " na" : "") + "\">" + EscapeXml(text) + "</td>";
}

}  // namespace

std::string TenantTable(const std::vector<PolicyResult>& rs) {
  // Tenants in name order, each followed by one row per policy that ran it.
  std::map<std::string, std::vector<std::pair<size_t, const TenantResult*>>> rows;
  for (size_t p = 0; p < rs.size(); ++p) {
    if (rs[p].mode != "replay" || rs[p].tenants.size() < 2) continue;
    for (const TenantResult& t : rs[p].tenants) rows[t.tenant].emplace_back(p, &t);
  }
  if (rows.empty()) return "";
  auto dur = [&](const Distribution& d, double Distribution::*f) {
    return d.count > 0 ? Cell(FormatSeconds(d.*f)) : Cell("\xE2\x80\x94", true);
  };
  std::string h = "<div class=\"tablewrap\"><table><thead><tr>";
  for (const char* col : {"tenant", "policy"}) h += std::string("<th class=\"left\">") + col + "</th>";
  for (const std::string& col : std::vector<std::string>{"jobs", "finished", "JCT mean", "JCT p99",
                                "queue mean", "queue p99", "GPU share %", "guarantee %",
                                "&#961; mean", "&#961; max", "preempted", "GPU-h lost"})
    h += "<th>" + col + "</th>";
  h += "</tr></thead><tbody>";
  size_t shown = 0;
  for (const auto& [tenant, list] : rows) {
    if (shown++ == kMaxTenants) break;
    for (const auto& [p, t] : list) {
      h += "<tr><td class=\"left\">" + EscapeXml(tenant.empty() ? "(none)" : tenant) + "</td>";
      h += "<td class=\"left\"><span class=\"swatch\" style=\"background:" + std::string(SeriesColor(p)) + "\"></span>" +
           EscapeXml(rs[p].policy) + "</td>";
      h += Cell(Thousands(t->jobs)) + Cell(Thousands(t->jobs_finished));
      h += dur(t->jct_s, &Distribution::mean) + dur(t->jct_s, &Distribution::p99);
      h += dur(t->queue_delay_s, &Distribution::mean) + dur(t->queue_delay_s, &Distribution::p99);
      h += Cell(Fmt("%.2f", 100 * t->gpu_share)) + Cell(Fmt("%.2f", 100 * t->guarantee_share));
      h += t->rho.count > 0 ? Cell(Fmt("%.2f", t->rho.mean)) + Cell(Fmt("%.1f", t->rho.max))
                            : Cell("\xE2\x80\x94", true) + Cell("\xE2\x80\x94", true);
      h += Cell(Thousands(t->preemptions)) + Cell(Fmt("%.1f", t->gpu_hours_lost)) + "</tr>";
    }
  }
  h += "</tbody></table></div>";
  if (rows.size() > kMaxTenants)
    h += "<p class=\"note\">" + std::to_string(rows.size() - kMaxTenants) +
         " more tenants in the JSON report.</p>";
  return h;
}

}  // namespace berth::sim
