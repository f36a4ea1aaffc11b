// A fault: one failure or planned maintenance of one component, resolved
// against a cluster. Faults come from a failure file (timed events) or from
// the seeded generator (rates per component); the FaultHandler applies them
// to a scheduler. Kinds and what they take out:
//
//   gpu          one GPU of a node (the node keeps its other GPUs)
//   task         a job's process on one GPU crashes (software, NCCL timeout):
//                the job holding that GPU is interrupted, nothing goes down
//   node         a whole node (host, CPU, memory, power ...)
//   link         one node's network (NIC, cable, switch port): its multi-node
//                gangs fail, its single-node work continues
//   leaf, spine  a switch: every node under it loses its network (multi-node
//                gangs there fail, single-node work continues)
//   cluster      a whole cluster: everything on it is requeued
//   maintenance  planned: the domain (or node) is drained by at + deadline,
//                jobs still there then checkpoint and move; it is down for
//                `duration` after the deadline
//
// While a node is down or cut off, nothing new is placed on it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "berth/cluster/level.h"
#include "berth/common/ids.h"
#include "berth/common/quantity.h"

namespace berth::faults {

enum class FaultKind : uint8_t { kGpu, kTask, kNode, kLink, kLeaf, kSpine, kCluster, kMaintenance };
const char* FaultKindName(FaultKind kind);
std::optional<FaultKind> ParseFaultKind(std::string_view name);

struct Fault {
  TimeUs at = 0;  // when it happens (maintenance: when the drain begins)
  FaultKind kind = FaultKind::kNode;
  NodeId node;        // gpu, task, node, link; maintenance of one node
  int32_t gpu = -1;   // gpu, task: node-local index
  DomainId domain;    // leaf, spine, cluster; maintenance of a domain
  TimeUs duration = 0;  // how long it is down (0 for task faults)
  TimeUs deadline = 0;  // maintenance: drained by at + deadline
  std::string cause;    // e.g. "faulty-gpu", "hbm3", "planned"

  bool planned() const { return kind == FaultKind::kMaintenance; }
};

}  // namespace berth::faults
