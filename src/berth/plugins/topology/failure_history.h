// Recent failures per node, for placement that avoids bad domains: the fault
// handler (faults/handler.h) records every node-level fault (gpu, node, link;
// a leaf or spine switch fault counts 1 spread over the nodes under it), and
// the "topology-reliable" plan plugin orders the candidate domains of a long,
// large gang by the failures they saw, fewest first (then tightest).
//
//   FailureHistory h(/*half_life=*/7 * 24 * 3600 * kUsPerSecond);
//   h.Record(NodeId(3), at);              // weight 1 at `at`
//   int64_t r = h.Risk(0, 8, now);        // nodes [0, 8): quarter-faults, decayed
//
// A fault weighs 2^-(age / half_life); Risk sums the weights of the nodes in
// a range and rounds down to quarters of a fault (an integer), so that two
// domains whose history differs by dust are equal and the planner's own
// order (tightest first, lowest id) decides between them.
#pragma once

#include <cstdint>
#include <vector>

#include "berth/common/ids.h"
#include "berth/common/quantity.h"

namespace berth::plugins {

class FailureHistory {
 public:
  explicit FailureHistory(TimeUs half_life) : half_life_(half_life) {}
  void Record(NodeId n, TimeUs at, double weight = 1.0);
  // Decayed weight of nodes [begin, end) at `now`, in quarters of a fault.
  int64_t Risk(int32_t begin, int32_t end, TimeUs now) const;
  // Faults recorded so far (any node; a spread fault counts its weight).
  double recorded() const { return recorded_; }
  TimeUs half_life() const { return half_life_; }

 private:
  struct Entry {
    TimeUs at;
    double weight;
  };
  TimeUs half_life_;
  std::vector<std::vector<Entry>> by_node_;
  double recorded_ = 0;
};

// A plugin that learns from failures: the fault handler finds it among the
// profile's plugins (dynamic_cast) and records every fault into its history.
class FailureAware {
 public:
  virtual ~FailureAware() = default;
  virtual FailureHistory& failure_history() = 0;
};

}  // namespace berth::plugins
