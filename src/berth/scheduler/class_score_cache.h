// The class score cache: every node's score for each of the last few task
// requests (task classes) a node-local score plugin was asked about, kept
// across tasks and jobs, so that a decision costs the nodes that changed since
// that class was last placed (times log N), not a scan of every node.
//
// A node-local score (ScorePlugin::NodeLocal: fgd, berth-frag, gpuclustering)
// depends only on the task request and the node's own state, so a node's score
// for a class can only change when an event changes that node. Each class
// holds a GroupScoreCache (group_score_cache.h): raw scores, the reason each
// failing node fails, and a tournament tree whose root is the full scan's
// choice (highest score, ties to the lowest rank). Every applied event marks
// its node dirty in every class; a Find rescores the dirty nodes of its class.
// A request no class holds takes the least recently used slot and builds it
// (one scan); the openb trace has 151 task classes (CPU, memory, GPUs), so a
// small cluster keeps them all. A uniform draw (ScorePlugin::UniformPick:
// `random`) is kept the same way: which nodes pass, with their count. FGD's and berth-frag's typical pods come from the workload as
// read when the plugin is built, so their scoring function does not change
// during a run; a node's version is all a score depends on.
//
//   ClassScoreCache cache;          // ClassesFor(nodes) slots
//   cache.NodeChanged(n);           // after every applied event
//   std::optional<NodeId> n = cache.Find(ctx, req, scorer, filters);
//   if (!n) use(cache.rejects());   // per-filter counts for the verdict
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "berth/framework/plugin.h"
#include "berth/scheduler/group_score_cache.h"

namespace berth::scheduler {

class ClassScoreCache {
 public:
  // Task classes kept at once: as many as fit in kNodeSlots node entries
  // (each about 25 bytes), between kMinClasses and kMaxClasses.
  static constexpr size_t kNodeSlots = size_t{1} << 20;
  static constexpr size_t kMinClasses = 16;
  static constexpr size_t kMaxClasses = 256;
  static size_t ClassesFor(int32_t num_nodes);

  void NodeChanged(NodeId n) {
    for (Slot& s : slots_) s.cache.NodeChanged(n);
  }
  // The full scan's choice for `req`, or nullopt when no node passes the
  // filters (then rejects() gives the scan's counts).
  std::optional<NodeId> Find(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                             const framework::ScorePlugin& scorer, std::span<framework::FilterPlugin* const> filters);
  // After a Find: the nodes that fail, as GroupScoreCache::rejects().
  std::span<const int32_t> rejects() const { return slots_[last_].cache.rejects(); }

  // Scans made to build a class (tests, benchmarks).
  int64_t builds() const { return builds_; }
  // Nodes filtered and scored by the last Find.
  int64_t visited() const { return visited_; }

 private:
  struct Slot {
    GroupScoreCache cache;
    int64_t last_use = 0;
  };
  std::vector<Slot> slots_;
  size_t last_ = 0;
  int64_t uses_ = 0;
  int64_t builds_ = 0;
  int64_t visited_ = 0;
};

}  // namespace berth::scheduler
