// Co-location set-up for the services simulation.
#include "berth/sim/service_colocation.h"

#include <algorithm>
#include <cstdio>

namespace berth::sim {

const char* ColocationModeName(ColocationMode m) {
  switch (m) {
    case ColocationMode::kNone: return "none";
    case ColocationMode::kColocate: return "colocate";
    case ColocationMode::kStatic: return "static";
    case ColocationMode::kUnbounded: return "unbounded";
  }
  return "none";
}

bool ParseColocationMode(const std::string& s, ColocationMode& out) {
  if (s == "none") out = ColocationMode::kNone;
  else if (s == "colocate") out = ColocationMode::kColocate;
  else if (s == "static") out = ColocationMode::kStatic;
  else if (s == "unbounded") out = ColocationMode::kUnbounded;
  else return false;
  return true;
}

void MapOpenbQos(std::vector<job::JobSpec>& jobs) {
  for (job::JobSpec& j : jobs) {
    if (j.tenant == "LS" || j.tenant == "Guaranteed") {
      job::ServiceSpec s;
      s.replicas = s.min_replicas = s.max_replicas = 1;
      s.latency_class = job::LatencyClass::kCritical;
      j.service = s;
      j.checkpoint_interval = -1;
    } else if (j.tenant == "BE") {
      j.best_effort = true;
      j.checkpoint_interval = -1;
    }
  }
}

std::vector<job::JobSpec> WindowJobs(const std::vector<job::JobSpec>& jobs, TimeUs from, TimeUs to) {
  std::vector<job::JobSpec> out;
  for (const job::JobSpec& j : jobs) {
    if (to >= 0 && j.submit_time >= to) continue;
    job::JobSpec w = j;
    if (j.submit_time < from) {
      // Alive at `from` only when its run (known) lasts past it.
      if (j.duration < 0 || j.submit_time + j.duration <= from) continue;
      w.duration = j.submit_time + j.duration - from;
      w.submit_time = from;
    }
    w.submit_time -= from;
    out.push_back(std::move(w));
  }
  return out;
}

int64_t ReservedGpus(const ColocationSettings& s, const cluster::Cluster& cluster) {
  int64_t g = 0;
  const int32_t n = std::min<int32_t>(s.reserved_nodes, static_cast<int32_t>(cluster.nodes().size()));
  for (int32_t i = 0; i < n; ++i) g += cluster.nodes()[static_cast<size_t>(i)].gpu_count;
  return g;
}

Status ApplyColocation(const ColocationSettings& s, ColocationMode mode, const cluster::Cluster& cluster,
                       framework::Profile& profile, scheduler::SchedulerOptions& options) {
  if (mode == ColocationMode::kNone) return Status::Ok();
  const int32_t nodes = static_cast<int32_t>(cluster.nodes().size());
  if (s.reserved_nodes < 1 || s.reserved_nodes >= nodes)
    return InvalidArgument("colocation.reserved_nodes: " + std::to_string(s.reserved_nodes) +
                           " must leave batch nodes: 1.." + std::to_string(nodes - 1) + " of the cluster's " +
                           std::to_string(nodes));
  framework::PluginRef ref{"colocation", {}, 1};
  ref.args["reserved"] = "0-" + std::to_string(s.reserved_nodes - 1);
  ref.args["mode"] = mode == ColocationMode::kStatic ? "static" : "colocate";
  char buf[32];
  auto ratio = [&buf](double r) {
    std::snprintf(buf, sizeof buf, "%.3f", r);
    return std::string(buf);
  };
  ref.args["overcommit"] = ratio(s.overcommit);
  if (mode != ColocationMode::kStatic) ref.args["spill"] = s.spill ? "true" : "false";
  for (const auto& [name, r] : s.node_overcommit) ref.args["node." + name] = ratio(r);
  for (const auto& [name, r] : s.queue_overcommit) ref.args["queue." + name] = ratio(r);
  profile.filter.push_back(ref);
  profile.admit.push_back(ref);
  if (mode == ColocationMode::kUnbounded) profile.post_filter.clear();
  if (mode == ColocationMode::kColocate) {
    options.yield_best_effort = s.best_effort_deadline;
    options.yield_training_grace = s.training_grace;
  }
  return Status::Ok();
}

}  // namespace berth::sim
