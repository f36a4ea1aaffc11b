// What the plugins that learn from the workload read of it before the run,
// gathered in one pass over the jobs: the lowest priority (the preemption
// plugins' floor), the tasks per shape (FGD's and berth-frag's typical pods)
// and the CPU per milli-GPU of the GPU tasks (berth-frag's kappa). A driver
// that holds the jobs lets the plugins compute the facts from them
// (PluginContext::workload); one that streams its trace gathers them on its
// first read of the file and hands them over (PluginContext::facts), so the
// plugins build the same models either way.
//
//   WorkloadFacts f;
//   for (const job::JobSpec& j : jobs) f.Add(j);   // in trace order
//   PluginContext ctx;  ctx.cluster = &cluster;  ctx.facts = std::make_shared<const WorkloadFacts>(std::move(f));
//   std::shared_ptr<const WorkloadFacts> seen = FactsOf(ctx);  // what a plugin reads
#pragma once

#include <compare>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "berth/common/quantity.h"
#include "berth/job/job.h"

namespace berth::framework {

struct PluginContext;

// The shape of each task of a group: (CPU milli, GPU milli per GPU, GPU
// count, GPU spec as written); memory is ignored; CPU-only tasks have milli 0
// and count 0. Member order is the tie-break order of FGD's original
// simulator (CPU, milli, count, spec).
struct TaskShape {
  MilliCpu cpu_milli = 0;
  MilliGpu milli_per_gpu = 0;  // 0 for CPU-only tasks
  int32_t gpus = 0;
  std::string gpu_spec;  // "" = any GPU type; else '|'-separated types

  auto operator<=>(const TaskShape&) const = default;
  bool operator==(const TaskShape&) const = default;

  static TaskShape Of(const job::TaskGroup& group);
};

struct WorkloadFacts {
  int64_t jobs = 0;
  // The lowest job priority (INT32_MAX while there are no jobs).
  int32_t lowest_priority = std::numeric_limits<int32_t>::max();
  // Tasks per shape, every task of every group; ordered, so iteration is
  // deterministic.
  std::map<TaskShape, int64_t> shape_tasks;
  int64_t total_tasks = 0;
  // Over the GPU tasks: sum of count * cpu_milli and of count * gpus *
  // milli_per_gpu, as doubles added in job order (kappa is their ratio).
  double gpu_task_cpu = 0;
  double gpu_task_milli = 0;

  // Counts one more job (call in trace order).
  void Add(const job::JobSpec& j);
  static WorkloadFacts Of(std::span<const job::JobSpec> jobs);
};

// The facts a plugin reads from its context: the driver's (ctx.facts), else
// computed from ctx.workload; null when the context has neither (or no jobs).
std::shared_ptr<const WorkloadFacts> FactsOf(const PluginContext& ctx);

}  // namespace berth::framework
