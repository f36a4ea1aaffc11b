// In-place repair in Kubernetes mode (docs/kubernetes.md, "In-place repair"):
// the pieces of kube_repair.cc that stand alone. The repair itself runs on
// KubeScheduler's loop (kube_scheduler.h: NodeLost, TryRepair,
// AttachReplacements, ExpireRepairs, RefreshSpares); where a task goes is
// the core's search (faults/repair_target.h), and the move is the core's
// Scheduler::RepairTask.
//
//   ParseRepairAnnotation("pod ml/a-0: annotation berth.dev/repair", "in-place")  // kInPlace
//   ParseRepairAnnotation("...", "")                                           // nullopt: the flag decides
#pragma once

#include <optional>
#include <string>

#include "berth/common/status.h"
#include "berth/faults/handler.h"

namespace berth::kube {

// The annotation that sets a gang's repair mode, on its pods or PodGroup.
inline constexpr const char* kRepairAnnotation = "berth.dev/repair";

// "in-place" or "requeue"; "" is nullopt (KubeSchedulerOptions::repair
// decides). Errors: InvalidArgument naming `where` and the value.
StatusOr<std::optional<faults::RepairMode>> ParseRepairAnnotation(const std::string& where, const std::string& value);

}  // namespace berth::kube
