// Verdicts: the answer of a plugin or a cycle that is not a failure of the
// system but a statement about a job ("cannot place it now, and why"). The
// code says whether waiting or preempting can help, as in the Kubernetes
// scheduling framework.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace berth::framework {

enum class VerdictCode {
  kSuccess,
  kUnschedulable,   // does not fit now; may fit later or after preemption
  kUnresolvable,    // can never fit (no node of that type, larger than any node)
  kWait,            // admitted later (quota, gang members not ready, reservation)
  kError,           // a plugin failed
};

const char* VerdictCodeName(VerdictCode c);

// How many nodes one filter (or "down") turned away for a task.
struct RejectCount {
  std::string reason;  // the filter's FailReason, or "down"
  int32_t nodes = 0;
};

struct Verdict {
  VerdictCode code = VerdictCode::kSuccess;
  std::string plugin;  // who said so
  std::string reason;  // human readable, for "why is my job pending?"
  // For a task no node would take: the nodes each filter rejected (only
  // filters that rejected some), in filter order. Empty otherwise.
  std::vector<RejectCount> rejects;

  static Verdict Success() { return {}; }
  static Verdict Unschedulable(std::string plugin, std::string reason) {
    return {VerdictCode::kUnschedulable, std::move(plugin), std::move(reason), {}};
  }
  static Verdict Unresolvable(std::string plugin, std::string reason) {
    return {VerdictCode::kUnresolvable, std::move(plugin), std::move(reason), {}};
  }
  static Verdict Wait(std::string plugin, std::string reason) {
    return {VerdictCode::kWait, std::move(plugin), std::move(reason), {}};
  }
  bool ok() const { return code == VerdictCode::kSuccess; }
};

}  // namespace berth::framework
