// The index search: the node a full scan would choose for one task, found by
// visiting only nodes that the state's indexes say can hold it, best first.
//
// The nodes that can hold a task of g whole GPUs of type t are the up nodes in
// the buckets nodes_with_full_free(t, k), k >= g; a share of r milli fits on a
// node of share class c >= r / 32 (a partly used GPU with enough free) or of
// a bucket k >= 1. Each such set is a tier; the score plugin bounds its score
// over the tier (ScorePlugin::ScoreBound). Tiers are visited by bound, highest
// first; each node runs the profile's filters and is scored as a full scan
// would. The search stops when the best score found beats the bound of every
// tier left; with ranks by node id (no custom rank) a tier whose bound equals
// the best score is visited only below the best node's id (a tie there would
// lose). So the result is the scan's choice: the highest raw score, ties to
// the lowest rank (the plugin keeps that choice through Normalize).
//
// Each tier also carries the range of free CPU and free milli-GPU of its
// nodes, so bounds are tight (best fit's CPU term makes idle nodes score far
// below a bound that assumes no CPU left). The range only widens as nodes
// change (NodeChanged, called after every event the scheduler applies), which
// keeps it a valid bound; a visit of a whole tier sets it to the exact range
// of its nodes.
//
// It applies when the profile has no candidate plugin, exactly one score
// plugin with a positive weight that bounds its scores, the fit filter (so a
// tier holds every node that passes the filters), and the task asks for whole
// GPUs or one share of a known type. Otherwise, or when no node passes, it
// returns nullopt and the scheduler scans (which also gives the verdict).
//
//   IndexSearch search;
//   std::optional<NodeId> n = search.Find(ctx, req, scorer, filters, type_cpu_max);
#pragma once

#include <algorithm>
#include <optional>
#include <span>
#include <vector>

#include "berth/framework/plugin.h"

namespace berth::scheduler {

class IndexSearch {
 public:
  // Sizes the tier ranges for `state` (as wide as its nodes allow).
  void Reset(const state::ClusterState& state, std::span<const MilliCpu> type_cpu_max);
  // Node n's free resources or tiers changed (after the event was applied).
  void NodeChanged(const state::ClusterState& state, NodeId n);

  // `type_cpu_max[t]`: the most CPU of any node of GPU type t. With `only`
  // valid, the search keeps to the nodes of that GPU type.
  std::optional<NodeId> Find(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                             const framework::ScorePlugin& scorer,
                             std::span<framework::FilterPlugin* const> filters,
                             std::span<const MilliCpu> type_cpu_max, GpuTypeId only = GpuTypeId());
  // The lowest raw score of any node that passes the filters (the scan's
  // minimum before Normalize; of type `only` when valid), visiting tiers by
  // the scorer's floor
  // (ScorePlugin::ScoreFloor), lowest first, until the lowest score found is
  // at most every floor left. nullopt when no node passes or the search does
  // not apply.
  std::optional<int64_t> FindLowest(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                                    const framework::ScorePlugin& scorer,
                                    std::span<framework::FilterPlugin* const> filters,
                                    std::span<const MilliCpu> type_cpu_max, GpuTypeId only = GpuTypeId());
  // Every node in a tier of the task's accepted types (of type `only` when
  // valid), once each, into `out`: a superset of the nodes that pass the fit
  // filter. False when the search does not apply to the task.
  bool TierNodes(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                 std::span<const MilliCpu> type_cpu_max, GpuTypeId only, std::vector<int32_t>& out);
  // How many nodes of type t pass the fit filter, from the bucket sizes
  // alone: for a task of whole GPUs that states no memory or GPU memory and
  // whose CPU every node of those buckets has free (the buckets' CPU ranges).
  // nullopt when that cannot be told without visiting the nodes.
  std::optional<int32_t> CountFitsByBuckets(const state::ClusterState& s, const framework::TaskRequest& req,
                                            GpuTypeId t);
  // The last Find or FindLowest applied to the task (so nullopt meant that no
  // node passes the filters), rather than leaving it to a scan.
  bool applicable() const { return applicable_; }

  // Nodes filtered and scored by the last Find (for tests and benchmarks).
  int64_t visited() const { return visited_; }

 private:
  // What the nodes of one tier hold free: lo <= value <= hi for each member.
  struct Range {
    MilliCpu cpu_lo = 0;
    MilliCpu cpu_hi = 0;
    MilliGpu free_lo = 0;
    MilliGpu free_hi = 0;
    void Widen(MilliCpu cpu, MilliGpu free) {
      cpu_lo = std::min(cpu_lo, cpu);
      cpu_hi = std::max(cpu_hi, cpu);
      free_lo = std::min(free_lo, free);
      free_hi = std::max(free_hi, free);
    }
  };
  struct Tier {
    const DenseBitset* nodes;
    int64_t bound;
    Range* range;
  };
  // Fills tiers_ with the tiers that can hold the task (of type `only` when
  // valid), each with bound_of(tier); false when the search does not apply.
  template <typename BoundOf>
  bool BuildTiers(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                  std::span<const MilliCpu> type_cpu_max, GpuTypeId only, BoundOf bound_of);
  // BuildTiers, then the tiers by bound, highest or lowest first (stable);
  // sets applicable_ and clears visited_.
  template <typename BoundOf>
  bool SortedTiers(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                   std::span<const MilliCpu> type_cpu_max, GpuTypeId only, bool highest_first, BoundOf bound_of);
  // Node is up and passes every filter (counted in visited_).
  bool Passes(const framework::CycleContext& ctx, const framework::TaskRequest& req,
              std::span<framework::FilterPlugin* const> filters, NodeId node);
  // Per GPU type: the bucket tiers k = 0..max, then the share classes.
  Range& BucketRange(GpuTypeId t, int k) { return ranges_[t.value()][k]; }
  Range& ShareRange(GpuTypeId t, int c) { return ranges_[t.value()][share_base_[t.value()] + c]; }
  std::vector<std::vector<Range>> ranges_;
  std::vector<int32_t> share_base_;
  std::vector<Tier> tiers_;  // scratch, reused across calls
  int64_t visited_ = 0;
  bool applicable_ = false;
  std::vector<uint32_t> seen_;  // TierNodes: per node, == seen_stamp_ once listed
  uint32_t seen_stamp_ = 0;
};

}  // namespace berth::scheduler
