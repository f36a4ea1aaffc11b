// Native trace writing: JobSpec -> one JSON object per line.
#include "berth/sim/readers/native_writer.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "berth/json/service_fields.h"

namespace berth::sim {
namespace {

using nlohmann::ordered_json;

// Whole seconds as an integer, else a fraction that reads back to the same microsecond.
ordered_json Seconds(TimeUs us) {
  if (us % kUsPerSecond == 0) return us / kUsPerSecond;
  return static_cast<double>(us) / 1e6;
}

ordered_json GroupJson(const job::TaskGroup& g) {
  ordered_json o;
  o["name"] = g.name;
  o["count"] = g.count;
  if (g.min_count >= 0) o["min_count"] = g.min_count;
  o["gpus"] = g.gpus;
  if (g.milli_per_gpu != kMilliPerGpu) o["milli_per_gpu"] = g.milli_per_gpu;
  if (g.cpu_milli) o["cpu_milli"] = g.cpu_milli;
  if (g.memory_mib) o["memory_mib"] = g.memory_mib;
  if (!g.gpu_type_spec.empty()) {
    ordered_json types = ordered_json::array();
    size_t start = 0;
    while (start <= g.gpu_type_spec.size()) {
      size_t bar = g.gpu_type_spec.find('|', start);
      if (bar == std::string::npos) bar = g.gpu_type_spec.size();
      if (bar > start) types.push_back(g.gpu_type_spec.substr(start, bar - start));
      start = bar + 1;
    }
    o["gpu_types"] = std::move(types);
  }
  if (g.block_tasks > 0) {
    o["block_tasks"] = g.block_tasks;
    o["block_level"] = cluster::LevelName(g.block_level);
  }
  if (g.gpu_memory_mib > 0) o["gpu_memory_mib"] = g.gpu_memory_mib;
  if (g.required_level) o["required_level"] = cluster::LevelName(*g.required_level);
  if (g.preferred_level) o["preferred_level"] = cluster::LevelName(*g.preferred_level);
  return o;
}

}  // namespace

StatusOr<std::string> NativeJobLine(const job::JobSpec& j) {
  ordered_json o;
  o["name"] = j.name;
  if (!j.tenant.empty()) o["tenant"] = j.tenant;
  if (!j.queue.empty()) o["queue"] = j.queue;
  if (j.priority) o["priority"] = j.priority;
  o["submit_time_s"] = Seconds(j.submit_time);
  if (j.duration >= 0) o["duration_s"] = Seconds(j.duration);
  if (j.runtime_limit >= 0) o["runtime_limit_s"] = Seconds(j.runtime_limit);
  if (!j.job_class.empty()) o["job_class"] = j.job_class;
  if (!j.dataset.empty()) o["dataset"] = j.dataset;
  if (j.dataset_mib) o["dataset_mib"] = j.dataset_mib;
  if (j.checkpoint_interval >= 0) o["checkpoint_interval_s"] = Seconds(j.checkpoint_interval);
  if (j.restart_cost >= 0) o["restart_cost_s"] = Seconds(j.restart_cost);
  if (j.min_workers > 0) o["min_workers"] = j.min_workers;
  if (j.max_workers > 0) o["max_workers"] = j.max_workers;
  if (j.resize_cost >= 0) o["resize_cost_s"] = Seconds(j.resize_cost);
  if (j.batch_size > 0) o["batch_size"] = j.batch_size;
  if (j.work_steps >= 0) o["work_steps"] = j.work_steps;
  if (j.required_level) o["required_level"] = cluster::LevelName(*j.required_level);
  if (j.preferred_level) o["preferred_level"] = cluster::LevelName(*j.preferred_level);
  if (!j.regions.empty()) o["regions"] = j.regions;
  if (!j.avoid_regions.empty()) o["avoid_regions"] = j.avoid_regions;
  if (j.span_regions) o["span_regions"] = true;
  if (j.best_effort) o["best_effort"] = true;
  if (j.deadline > 0) o["deadline_s"] = Seconds(j.deadline);
  if (j.budget_cents >= 0) o["budget_usd"] = static_cast<double>(j.budget_cents) / 100.0;
  if (j.launcher != job::Launcher::kNone) o["launcher"] = job::LauncherName(j.launcher);
  if (!j.command.empty()) o["command"] = j.command;
  if (!j.env.empty()) {
    ordered_json env = ordered_json::object();
    for (const auto& [name, value] : j.env) env[name] = value;
    o["env"] = std::move(env);
  }
  ordered_json groups = ordered_json::array();
  for (const auto& g : j.groups) groups.push_back(GroupJson(g));
  o["groups"] = std::move(groups);
  berth::json::ServiceToJson(j, o);
  try {
    return o.dump();
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument("job '" + j.name + "': cannot write as JSON: " + e.what());
  }
}

Status WriteNativeTrace(const std::vector<job::JobSpec>& jobs, const std::string& path) {
  std::ofstream out(path);
  if (!out) return NotFound(path + ": cannot write");
  for (const auto& j : jobs) {
    BERTH_ASSIGN_OR_RETURN(std::string line, NativeJobLine(j));
    out << line << '\n';
  }
  out.flush();
  if (!out) return Internal(path + ": write error");
  return Status::Ok();
}

}  // namespace berth::sim
