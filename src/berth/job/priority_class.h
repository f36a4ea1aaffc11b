// PriorityClass names a job document may give instead of a number
// (`"priority_class": "train"`), mapped to priorities by one fixed table
// (docs/service.md, "The job document"): Kubernetes' two system classes,
// KAI Scheduler's built-in workload classes, and three plain levels.
//
//   PriorityOfClass("train") -> 50;  PriorityOfClass("nope") -> nullopt
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace berth::job {

struct PriorityClass {
  std::string_view name;
  int32_t priority;
};

// The table, highest priority first.
std::span<const PriorityClass> PriorityClasses();

// The priority of a class name (exact, case-sensitive as in Kubernetes);
// nullopt when the table has no such class.
std::optional<int32_t> PriorityOfClass(std::string_view name);

// "system-node-critical, system-cluster-critical, ..." for error messages.
std::string_view PriorityClassNames();

}  // namespace berth::job
