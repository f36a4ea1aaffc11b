// Fixtures for the report tests.
#include "berth/testing/report_fixtures.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "berth/common/rng.h"

namespace berth::testing {

sim::SimulateOutput SyntheticReplayOutput() {
  sim::SimulateOutput out;
  out.cluster_summary = "64 nodes, 512 GPUs; H100 64/512; 1 cluster(s), 2 spine(s), 8 leaf block(s)";
  out.trace_summary = "philly: 3000 jobs from 3012 lines (12 skipped)";
  out.trace_name = "synthetic.csv";
  const char* names[] = {"fifo", "sjf", "<b>&amp;\"odd'</b>", "empty"};
  Rng rng(7);
  for (int p = 0; p < 4; ++p) {
    sim::PolicyResult r;
    r.policy = names[p];
    r.mode = "replay";
    r.seed = 42;
    r.capacity_milli_gpu = 512000;
    r.jobs_total = 3000;
    r.decision_log_hash = p == 3 ? "" : "00000000000000a" + std::to_string(p);
    if (p == 3) {  // a policy with no data at all
      out.results.push_back(std::move(r));
      continue;
    }
    r.jobs_placed = 2950 - 40 * p;
    r.jobs_failed = 10 * p;
    r.jobs_never_fit = 2;
    r.jobs_unfinished = 3000 - r.jobs_placed - r.jobs_failed;
    const double speed = 1.0 + 0.15 * p;
    double queue = 0;
    for (int i = 0; i <= 6000; ++i) {
      const double hours = i * 0.01;
      const double wave = 0.5 + 0.4 * std::sin(hours / (3.0 * speed)) * std::exp(-hours / 80.0);
      r.allocation_over_time.push_back({hours, 100.0 * std::clamp(wave + 0.05 * rng.UniformReal(), 0.0, 1.0)});
      queue = std::max(0.0, queue + (rng.UniformReal() < 0.5 + 0.01 * p ? 1 : -1));
      if (i % 5 == 0) r.queue_length_over_time.push_back({hours, queue});
    }
    for (int j = 0; j < 2500; ++j) r.jcts_s.push_back(std::exp(2 + 10 * rng.UniformReal()) * speed);
    r.jct_s = sim::Summarize(r.jcts_s);
    r.queue_delay_s = sim::Summarize({30.0 * speed, 600.0 * speed, 5400.0 * speed});
    r.makespan_s = 60 * 3600 * speed;
    r.utilization = 0.71 - 0.05 * p;
    r.gpu_allocation_ratio = r.utilization;
    r.wall_seconds = 1.25 + p;
    r.decisions = 3000;
    out.results.push_back(std::move(r));
  }
  return out;
}

std::string CheckTagBalance(const std::string& doc) {
  static const std::set<std::string> kVoid = {"meta", "br", "hr", "img", "input", "link", "col", "wbr", "source"};
  std::vector<std::string> stack;
  size_t i = 0;
  while ((i = doc.find('<', i)) != std::string::npos) {
    if (doc.compare(i, 4, "<!--") == 0) {
      i = doc.find("-->", i);
      if (i == std::string::npos) return "unclosed comment";
      continue;
    }
    const size_t end = doc.find('>', i);
    if (end == std::string::npos) return "unclosed tag at " + std::to_string(i);
    std::string tag = doc.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '!') continue;  // doctype
    const bool closing = tag[0] == '/';
    const bool self_closing = tag.back() == '/';
    std::string name = tag.substr(closing ? 1 : 0);
    name = name.substr(0, name.find_first_of(" \t\n/"));
    if (name.empty()) return "tag without a name: <" + tag + ">";
    if (name == "style") {  // skip the stylesheet body
      i = doc.find("</style>", i);
      if (i == std::string::npos) return "unclosed style";
      i += 8;
      continue;
    }
    if (self_closing || kVoid.count(name)) continue;
    if (!closing) {
      stack.push_back(name);
    } else {
      if (stack.empty() || stack.back() != name)
        return "</" + name + "> closes <" + (stack.empty() ? std::string("nothing") : stack.back()) + ">";
      stack.pop_back();
    }
  }
  if (!stack.empty()) return "<" + stack.back() + "> never closed";
  return "";
}

}  // namespace berth::testing
