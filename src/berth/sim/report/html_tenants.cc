// The per-tenant table of the HTML report.
#include <algorithm>
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

// One unit for every duration of the table, from the largest p99.
std::pair<double, const char*> Unit(double max_s) {
  if (max_s < 120) return {1, "s"};
  if (max_s < 2 * 3600) return {60, "min"};
  if (max_s < 72 * 3600) return {3600, "h"};
  return {86400, "d"};
}

std::string Cell(const std::string& text, bool na = false) {
  return std::string("<td class=\"num") + (na ? " na" : "") + "\">" + EscapeXml(text) + "</td>";
}

}  // namespace

std::string TenantTable(const std::vector<PolicyResult>& rs) {
  // Tenants in name order, each followed by one row per policy that ran it.
  std::map<std::string, std::vector<std::pair<size_t, const TenantResult*>>> rows;
  double max_s = 0;
  for (size_t p = 0; p < rs.size(); ++p) {
    if (rs[p].mode != "replay" || rs[p].tenants.size() < 2) continue;
    for (const TenantResult& t : rs[p].tenants) {
      rows[t.tenant].emplace_back(p, &t);
      max_s = std::max({max_s, t.jct_s.p99, t.queue_delay_s.p99});
    }
  }
  if (rows.empty()) return "";
  const auto [unit_s, unit] = Unit(max_s);
  auto dur = [&](const Distribution& d, double Distribution::*f) {
    return d.count > 0 ? Cell(Fmt("%.2f", d.*f / unit_s)) : Cell("\xE2\x80\x94", true);
  };
  std::string h = "<div class=\"tablewrap\"><table><thead><tr>";
  for (const char* col : {"tenant", "policy"}) h += std::string("<th class=\"left\">") + col + "</th>";
  const std::string u(unit);
  for (const std::string& col : std::vector<std::string>{"jobs", "finished", "JCT mean (" + u + ")", "JCT p99 (" + u + ")",
                                "queue mean (" + u + ")", "queue p99 (" + u + ")", "GPU share %", "guarantee %",
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
