// JSON report writer.
#include "berth/sim/report/json_report.h"

#include <fstream>
#include <nlohmann/json.hpp>

namespace berth::sim {
namespace {

nlohmann::json Dist(const Distribution& d) {
  return {{"count", d.count}, {"mean", d.mean}, {"p50", d.p50}, {"p95", d.p95}, {"p99", d.p99}, {"max", d.max}};
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
    j["jct_mean_s"] = r.jct_s.mean;
    j["jct_s"] = Dist(r.jct_s);
    j["queue_delay_mean_s"] = r.queue_delay_s.mean;
    j["queue_delay_s"] = Dist(r.queue_delay_s);
    j["makespan_s"] = r.makespan_s;
    j["utilization"] = r.utilization;
    if (r.fragmentation_ratio >= 0) {
      j["fragmentation_ratio"] = r.fragmentation_ratio;
      j["fragmented_gpu_share"] = r.fragmented_gpu_share;
    }
    j["decision_log_hash"] = r.decision_log_hash;
    j["decisions"] = r.decisions;
    j["wall_seconds"] = r.wall_seconds;
    arr.push_back(std::move(j));
  }
  return arr.dump(2);
}

Status WriteJsonReport(const SimulateOutput& out, const std::string& path) {
  std::ofstream f(path);
  if (!f) return NotFound(path + ": cannot write");
  f << ResultsToJson(out) << '\n';
  return f ? Status::Ok() : Unavailable(path + ": write failed");
}

}  // namespace berth::sim
