// The workload's facts for plugins built before the run.
#include "berth/framework/workload_facts.h"

#include <algorithm>

#include "berth/framework/plugin.h"

namespace berth::framework {

TaskShape TaskShape::Of(const job::TaskGroup& g) {
  return TaskShape{g.cpu_milli, g.gpus == 0 ? 0 : g.milli_per_gpu, g.gpus, g.gpu_type_spec};
}

void WorkloadFacts::Add(const job::JobSpec& j) {
  ++jobs;
  lowest_priority = std::min(lowest_priority, j.priority);
  for (const auto& g : j.groups) {
    shape_tasks[TaskShape::Of(g)] += g.count;
    total_tasks += g.count;
    if (g.gpus == 0) continue;
    gpu_task_cpu += static_cast<double>(g.count) * static_cast<double>(g.cpu_milli);
    gpu_task_milli += static_cast<double>(g.count) * g.gpus * static_cast<double>(g.milli_per_gpu);
  }
}

WorkloadFacts WorkloadFacts::Of(std::span<const job::JobSpec> jobs) {
  WorkloadFacts f;
  for (const auto& j : jobs) f.Add(j);
  return f;
}

std::shared_ptr<const WorkloadFacts> FactsOf(const PluginContext& ctx) {
  if (ctx.facts) return ctx.facts->jobs > 0 ? ctx.facts : nullptr;
  if (ctx.workload.empty()) return nullptr;
  return std::make_shared<const WorkloadFacts>(WorkloadFacts::Of(ctx.workload));
}

}  // namespace berth::framework
