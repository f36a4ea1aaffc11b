// The baseline victim choice of kube-scheduler's DefaultPreemption and
// Volcano's preempt action, for comparison with Berth's (victim_search.h):
// node by node, lowest priority first, blind to topology and checkpoints.
//
// For each task of the gang in turn (widest shape first):
//   - if some node holds it now (free room plus what earlier evictions gave
//     back, minus the gang's tasks already reserved), reserve it on the
//     first such node and go on;
//   - else, on every node, evict its candidates lowest priority first, then
//     most recently started, then by job id, until the task fits; among the
//     nodes where it then fits pick kube-scheduler's way: the lowest highest
//     victim priority, then the least sum of victim priorities, then the
//     fewest victims, then the latest start among the highest-priority
//     victims, then the lowest node id. Evict those (whole jobs: their tasks
//     elsewhere are freed too) and reserve the task there.
// A task that fits nowhere even then ends the search with no plan.
// Candidates and queue budgets are the same as Berth's (eligibility.h).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "berth/plugins/preempt/eligibility.h"
#include "berth/plugins/preempt/room.h"

namespace berth::plugins::preempt {

class LowestPriorityFirst {
 public:
  // Victims (indexes in view.running, by job id) or nullopt.
  std::optional<std::vector<int32_t>> Find(const framework::PreemptContext& ctx, const GangNeed& need,
                                           Eligibility& elig);

 private:
  struct Pick {
    int32_t node = -1;
    int32_t top_priority = 0;
    int64_t priority_sum = 0;
    int32_t count = 0;
    TimeUs top_start = 0;  // earliest start among the highest-priority victims
    std::vector<int32_t> victims;  // candidate indexes
  };
  static bool Better(const Pick& a, const Pick& b);
  // The victims on node n that let one task of `shape` fit there, or nullopt.
  bool NodePick(int32_t n, const TaskShape& shape, Eligibility& elig, Pick& out);

  const framework::SchedulerView* view_ = nullptr;
  Room room_;
  std::vector<uint8_t> selected_;
  struct Group {
    int32_t priority;
    TimeUs start;
    int64_t id;
    int32_t cand;
    size_t begin, end;
  };
  std::vector<Group> groups_;
};

}  // namespace berth::plugins::preempt
