// The failure file: timed faults (exact scenarios, tests) and failure rates
// per component (for the seeded generator), in plain text, one entry a line.
// Format (docs/failures.md; example: examples/failures/mixed.failures):
//
//   # a comment
//   at 2h gpu node-3/5 for 12h cause faulty-gpu     # one GPU, down 12 h
//   at 3h node node-7 for 6h cause host
//   at 4h link node-9 for 2h cause cable
//   at 5h task node-1/0 cause software-bug           # a crash, nothing goes down
//   at 6h leaf g0-leaf-1 for 30m cause network-switch
//   at 8h maintenance g0-leaf-2 deadline 1h for 4h   # drained by 9h, down 9h..13h
//   rate gpu 6.97e-6 cause faulty-gpu for exp:12h    # per GPU-hour, recovery ~ Exp(mean 12 h)
//   rate maintenance 1.7e-5 deadline 1h for 2h       # per node-hour
//   profile llama3 scale 2                            # a built-in profile's rates, x2
//
// Times and durations: 90s, 30m, 6h, 1.5d or seconds. Targets: a node name;
// NODE/GPU for gpu and task; a domain name of that level for leaf, spine and
// cluster; a node or any domain for maintenance. Rates are per component-hour:
// per GPU (gpu, task), per node (node, link, maintenance), per leaf, spine or
// cluster domain. Recovery distributions: exp:MEAN, fixed:D or a plain D.
// Every error names the file, the line and the field.
#pragma once

#include <string>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/common/status.h"
#include "berth/faults/fault.h"

namespace berth::faults {

// A duration drawn per fault: a fixed value or exponential with a mean.
struct DurationDist {
  enum class Kind : uint8_t { kFixed, kExponential };
  Kind kind = Kind::kFixed;
  TimeUs value = 0;  // the value, or the mean
  TimeUs Mean() const { return value; }
};

// Faults of one kind and cause arrive at `per_hour` per component-hour.
struct FailureRate {
  FaultKind kind = FaultKind::kNode;
  double per_hour = 0;
  std::string cause;
  DurationDist recovery;
  TimeUs deadline = 0;  // maintenance
};

struct FailureSpec {
  std::vector<Fault> events;  // sorted by time (stable: file order for ties)
  std::vector<FailureRate> rates;
  bool empty() const { return events.empty() && rates.empty(); }
};

// Parses failure-file text; `source` names it in errors.
StatusOr<FailureSpec> ParseFailureSpec(std::string_view text, const std::string& source,
                                       const cluster::Cluster& cluster);
// `--failures` value: a built-in profile name, NAME*SCALE (e.g. llama3*4),
// or a failure file's path.
StatusOr<FailureSpec> LoadFailures(const std::string& what, const cluster::Cluster& cluster,
                                    const std::string& flag = "--failures");

// A built-in profile's rates (rates are per component, so any cluster size
// works); NotFound for an unknown name. Profiles: llama3 (docs/failures.md).
StatusOr<std::vector<FailureRate>> BuiltinProfile(std::string_view name);
std::vector<std::string> BuiltinProfileNames();

}  // namespace berth::faults
