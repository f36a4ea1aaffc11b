// The group score cache: the node a full scan would choose for the next task
// of a run of identical tasks (a gang's group), found without filtering and
// scoring every node again.
//
// It holds the raw score of every node that passes the filters for one task
// request, and a tournament tree over them whose root is the best node: the
// highest score, ties to the lowest rank. Every event the scheduler applies
// marks its node dirty; the next Find for the same request filters and scores
// only the dirty nodes again and replays their paths up the tree. So a group of
// T tasks on N nodes costs one scan of N nodes plus T x (changed nodes) x log N.
// It also keeps, per node, why it fails (down, or the first filter it fails)
// and the count of nodes per reason, so a task that fits nowhere gets the scan's
// verdict without a scan.
//
// For a score that draws a uniformly random feasible node
// (ScorePlugin::UniformPick) it keeps which nodes pass in a bitset with a
// Fenwick tree of counts per word, and Find draws the scan's one
// rng.Uniform(feasible count) and selects that node in O(log N).
//
// It gives the full scan's choice when the profile filters with fit and
// every other filter passes every node for the task (FilterPlugin::
// PassesEveryNode), with one deciding score plugin with a positive weight whose score depends only on
// the task request and the node's own state and whose Normalize keeps the
// highest raw score as the only best (a plugin that bounds its scores, or a
// node-local one: framework/plugin.h), and no candidate plugin. The scheduler
// uses it only for such profiles: for bounded scores, for groups large enough
// to repay the first scan; for node-local ones, for every task
// (class_score_cache.h keeps one per task request).
//
//   GroupScoreCache cache;
//   cache.Build(ctx, req, scorer, filters);   // first task of the group
//   cache.NodeChanged(n);                     // after every applied event
//   std::optional<NodeId> n = cache.Find(ctx, req, scorer, filters);
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "berth/framework/plugin.h"

namespace berth::scheduler {

class GroupScoreCache {
 public:
  // Filters and scores every node for `req`; later Finds for an equal request
  // use the result.
  void Build(const framework::CycleContext& ctx, const framework::TaskRequest& req,
             const framework::ScorePlugin& scorer, std::span<framework::FilterPlugin* const> filters);
  // Whether the cache holds scores for a request equal to `req`.
  bool Holds(const framework::TaskRequest& req) const;
  // Node n's state changed (after the event was applied).
  void NodeChanged(NodeId n) {
    if (valid_ && !dirty_mark_[n.value()]) {
      dirty_mark_[n.value()] = 1;
      dirty_.push_back(n.value());
    }
  }
  // Forget the scores (the next Find returns nullopt until a Build).
  void Clear() { valid_ = false; }
  // The best node for `req` now, or nullopt when the cache does not hold `req`
  // or no node passes the filters.
  std::optional<NodeId> Find(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                             const framework::ScorePlugin& scorer, std::span<framework::FilterPlugin* const> filters);
  // After a Find that held `req`: the nodes that fail, as a full scan counts
  // them: [f] failed filter f first (f < filters), [filters] are down.
  std::span<const int32_t> rejects() const { return {reason_count_.data(), reason_count_.size() - 1}; }

  // Nodes filtered and scored by the last Build or Find (tests, benchmarks).
  int64_t visited() const { return visited_; }

 private:
  // Filters and scores node n into reason_/score_.
  void Rescore(const framework::CycleContext& ctx, const framework::TaskRequest& req,
               const framework::ScorePlugin& scorer, std::span<framework::FilterPlugin* const> filters, int32_t n);
  // The better of two tree entries (-1 = none).
  int32_t Better(int32_t a, int32_t b) const;
  void Replay(int32_t n);
  bool Feasible(int32_t n) const { return reason_[n] == pass_; }
  // The k-th feasible node in node order (0-based; k < the feasible count).
  int32_t KthFeasible(int64_t k) const;
  void SetFeasibleBit(int32_t n, bool on);

  bool valid_ = false;
  framework::TaskRequest req_;
  std::vector<int64_t> score_;     // per node: raw score (if feasible)
  std::vector<int32_t> rank_;      // per node: rank
  // Per node: f < filters: failed filter f first; filters: down; filters + 1
  // (pass_): up and passes every filter.
  std::vector<uint8_t> reason_;
  std::vector<int32_t> reason_count_;  // nodes per reason
  uint8_t pass_ = 1;
  std::vector<uint8_t> dirty_mark_;
  std::vector<int32_t> dirty_;
  size_t leaves_ = 1;              // a power of two >= the number of nodes
  std::vector<int32_t> tree_;      // 1-based heap layout; leaves at [leaves_, 2 leaves_)
  // For a uniform draw (ScorePlugin::UniformPick; kept only then): which
  // nodes pass, a bit per node, and a Fenwick tree of the passing nodes per
  // 64-node word.
  bool uniform_ = false;
  std::vector<uint64_t> feasible_bits_;
  std::vector<int32_t> word_fenwick_;  // 1-based
  int64_t visited_ = 0;
};

}  // namespace berth::scheduler
