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
  if (!replay) cols.erase(cols.begin() + 6);
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
    cols[i++].cells.push_back(r.queue_delay_s.count > 0 ? Fmt("%.1f", r.queue_delay_s.mean) : "-");
    cols[i++].cells.push_back(Fmt("%.3f", r.wall_seconds));
    cols[i++].cells.push_back(r.decision_log_hash);
  }
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
  s += row([&](size_t i) { return cols[i].header; });
  s += row([&](size_t i) { return std::string(width[i], '-'); });
  for (size_t p = 0; p < rs.size(); ++p) s += row([&](size_t i) { return cols[i].cells[p]; });

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
  return s;
}

}  // namespace berth::sim
