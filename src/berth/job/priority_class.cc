// The PriorityClass table.
#include "berth/job/priority_class.h"

namespace berth::job {
namespace {

constexpr PriorityClass kClasses[] = {
    {"system-node-critical", 2000001000},     // Kubernetes
    {"system-cluster-critical", 2000000000},  // Kubernetes
    {"high", 1000},
    {"inference", 125},  // KAI Scheduler: serving, not preempted
    {"build", 100},      // KAI Scheduler: interactive work, not preempted
    {"train", 50},       // KAI Scheduler: training, preemptible
    {"default", 0},      // as a job without a priority
    {"low", -1000},
};

}  // namespace

std::span<const PriorityClass> PriorityClasses() { return kClasses; }

std::optional<int32_t> PriorityOfClass(std::string_view name) {
  for (const PriorityClass& c : kClasses)
    if (c.name == name) return c.priority;
  return std::nullopt;
}

std::string_view PriorityClassNames() {
  return "system-node-critical, system-cluster-critical, high, inference, build, train, default, low";
}

}  // namespace berth::job
