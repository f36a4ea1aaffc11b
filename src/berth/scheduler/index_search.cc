// The index search (see index_search.h for the order and why it finds the
// full scan's choice).
#include "berth/scheduler/index_search.h"

#include <algorithm>
#include <limits>

namespace berth::scheduler {

using framework::NodeTier;

void IndexSearch::Reset(const state::ClusterState& s, std::span<const MilliCpu> type_cpu_max) {
  const size_t num_types = s.cluster().gpu_types().size();
  ranges_.assign(num_types, {});
  share_base_.assign(num_types, 0);
  for (size_t ti = 0; ti < num_types; ++ti) {
    const GpuTypeId t(static_cast<int16_t>(ti));
    const int32_t max_gpus = s.max_full_free(t);
    share_base_[ti] = max_gpus + 1;
    const Range widest{0, type_cpu_max[ti], 0, max_gpus * kMilliPerGpu};
    ranges_[ti].assign(static_cast<size_t>(max_gpus + 1 + state::kNumShareClasses), widest);
  }
}

void IndexSearch::NodeChanged(const state::ClusterState& s, NodeId n) {
  const auto& node = s.cluster().node(n);
  if (node.gpu_count == 0 || !s.up(n) || ranges_.empty()) return;
  const MilliCpu cpu = s.free_cpu(n);
  const MilliGpu free = s.node_free_milli(n);
  BucketRange(node.gpu_type, s.full_free_gpus(n)).Widen(cpu, free);
  const MilliGpu* gpu = s.gpu_free_array(n);
  for (int g = 0; g < node.gpu_count; ++g)
    if (gpu[g] > 0 && gpu[g] < kMilliPerGpu)
      ShareRange(node.gpu_type, state::ClusterState::ShareClassOf(gpu[g])).Widen(cpu, free);
}

template <typename BoundOf>
bool IndexSearch::BuildTiers(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                             std::span<const MilliCpu> type_cpu_max, GpuTypeId only, BoundOf bound_of) {
  tiers_.clear();
  if (req.gpus <= 0 || req.gpu_types_unknown) return false;
  const bool share = req.milli_per_gpu < kMilliPerGpu;
  if (share && req.gpus != 1) return false;
  const state::ClusterState& s = ctx.state;
  const int32_t num_types = static_cast<int32_t>(s.cluster().gpu_types().size());
  for (int32_t ti = 0; ti < num_types; ++ti) {
    const GpuTypeId t(static_cast<int16_t>(ti));
    if (!req.gpu_types.Accepts(t) || (only.valid() && t != only)) continue;
    const int32_t max_gpus = s.max_full_free(t);
    if (max_gpus < req.gpus) continue;
    NodeTier tier;
    tier.type = t;
    tier.cpu_hi = type_cpu_max[ti];
    if (share) {
      const MilliGpu r = req.milli_per_gpu;
      for (int c = state::ClusterState::ShareClassOf(r); c < state::kNumShareClasses; ++c) {
        const DenseBitset& set = s.nodes_with_share_class(t, c);
        Range& range = ShareRange(t, c);
        tier.full_free_lo = 0;
        tier.full_free_hi = max_gpus - 1;
        tier.node_free_lo = std::max({r, c * state::kShareClassWidth, range.free_lo});
        tier.node_free_hi = std::min(max_gpus * kMilliPerGpu - 1, range.free_hi);
        tier.cpu_lo = range.cpu_lo;
        tier.cpu_hi = std::min(type_cpu_max[ti], range.cpu_hi);
        std::optional<int64_t> bound = bound_of(tier);
        if (!bound) return false;
        tiers_.push_back({&set, *bound, &range});
      }
    }
    for (int32_t k = share ? 1 : req.gpus; k <= max_gpus; ++k) {
      Range& range = BucketRange(t, k);
      tier.full_free_lo = tier.full_free_hi = k;
      tier.node_free_lo = std::max(k * kMilliPerGpu, range.free_lo);
      tier.node_free_hi = std::min(k * kMilliPerGpu + (max_gpus - k) * (kMilliPerGpu - 1), range.free_hi);
      tier.cpu_lo = range.cpu_lo;
      tier.cpu_hi = std::min(type_cpu_max[ti], range.cpu_hi);
      std::optional<int64_t> bound = bound_of(tier);
      if (!bound) return false;
      tiers_.push_back({&s.nodes_with_full_free(t, k), *bound, &range});
    }
  }
  return true;
}

template <typename BoundOf>
bool IndexSearch::SortedTiers(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                              std::span<const MilliCpu> type_cpu_max, GpuTypeId only, bool highest_first,
                              BoundOf bound_of) {
  visited_ = 0;
  applicable_ = BuildTiers(ctx, req, type_cpu_max, only, bound_of);
  if (!applicable_) return false;
  if (highest_first) {
    std::stable_sort(tiers_.begin(), tiers_.end(), [](const Tier& a, const Tier& b) { return a.bound > b.bound; });
  } else {
    std::stable_sort(tiers_.begin(), tiers_.end(), [](const Tier& a, const Tier& b) { return a.bound < b.bound; });
  }
  return true;
}

bool IndexSearch::Passes(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                         std::span<framework::FilterPlugin* const> filters, NodeId node) {
  if (!ctx.state.up(node)) return false;
  ++visited_;
  for (const framework::FilterPlugin* f : filters)
    if (!f->Filter(ctx, req, node)) return false;
  return true;
}

std::optional<NodeId> IndexSearch::Find(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                                        const framework::ScorePlugin& scorer,
                                        std::span<framework::FilterPlugin* const> filters,
                                        std::span<const MilliCpu> type_cpu_max, GpuTypeId only) {
  if (!SortedTiers(ctx, req, type_cpu_max, only, /*highest_first=*/true,
                   [&](const NodeTier& tier) { return scorer.ScoreBound(ctx, req, tier); }))
    return std::nullopt;
  const state::ClusterState& s = ctx.state;

  const bool rank_by_id = ctx.node_rank.empty();
  bool found = false;
  int64_t best_score = 0;
  int32_t best_rank = 0;
  int32_t best = -1;
  for (const Tier& tier : tiers_) {
    if (found && best_score > tier.bound) break;
    // The exact range of the tier's nodes, if the loop sees them all.
    Range seen{std::numeric_limits<MilliCpu>::max(), 0, std::numeric_limits<MilliGpu>::max(), 0};
    bool whole = true;
    for (int32_t n = tier.nodes->FindNext(0); n >= 0; n = tier.nodes->FindNext(n + 1)) {
      // Nodes left in this tier score at most its bound: past the best one
      // (ranks by id) a tie would lose.
      if (found && (best_score > tier.bound || (rank_by_id && best_score == tier.bound && n >= best))) {
        whole = false;
        break;
      }
      const NodeId node(n);
      seen.Widen(s.free_cpu(node), s.node_free_milli(node));
      if (!Passes(ctx, req, filters, node)) continue;
      const int64_t score = scorer.Score(ctx, req, node);
      const int32_t rank = ctx.RankOf(node);
      if (!found || score > best_score || (score == best_score && rank < best_rank)) {
        found = true;
        best_score = score;
        best_rank = rank;
        best = n;
      }
    }
    if (whole) *tier.range = seen;  // an empty tier's range is empty (lo > hi) until a node joins
  }
  if (!found) return std::nullopt;
  return NodeId(best);
}

std::optional<int64_t> IndexSearch::FindLowest(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                                               const framework::ScorePlugin& scorer,
                                               std::span<framework::FilterPlugin* const> filters,
                                               std::span<const MilliCpu> type_cpu_max, GpuTypeId only) {
  if (!SortedTiers(ctx, req, type_cpu_max, only, /*highest_first=*/false,
                   [&](const NodeTier& tier) { return scorer.ScoreFloor(ctx, req, tier); }))
    return std::nullopt;
  const state::ClusterState& s = ctx.state;
  std::optional<int64_t> lowest;
  for (const Tier& tier : tiers_) {
    // Every node left (here and in the tiers after) scores at least this
    // tier's floor.
    if (lowest && *lowest <= tier.bound) break;
    Range seen{std::numeric_limits<MilliCpu>::max(), 0, std::numeric_limits<MilliGpu>::max(), 0};
    bool whole = true;
    for (int32_t n = tier.nodes->FindNext(0); n >= 0; n = tier.nodes->FindNext(n + 1)) {
      if (lowest && *lowest <= tier.bound) {
        whole = false;
        break;
      }
      const NodeId node(n);
      seen.Widen(s.free_cpu(node), s.node_free_milli(node));
      if (!Passes(ctx, req, filters, node)) continue;
      const int64_t score = scorer.Score(ctx, req, node);
      if (!lowest || score < *lowest) lowest = score;
    }
    if (whole) *tier.range = seen;
  }
  return lowest;
}

std::optional<int32_t> IndexSearch::CountFitsByBuckets(const state::ClusterState& s,
                                                       const framework::TaskRequest& req, GpuTypeId t) {
  if (req.gpus <= 0 || req.milli_per_gpu < kMilliPerGpu || req.gpu_types_unknown || req.gpu_memory_mib > 0 ||
      req.memory_mib > 0 || !req.gpu_types.Accepts(t) || ranges_.empty())
    return std::nullopt;
  // A bucket holds the up nodes of type t with k whole GPUs free: with k >= g
  // they pass fit but for CPU, which each bucket's range bounds from below.
  int32_t count = 0;
  for (int32_t k = req.gpus; k <= s.max_full_free(t); ++k) {
    const int32_t members = s.nodes_with_full_free(t, k).Count();
    if (members > 0 && BucketRange(t, k).cpu_lo < req.cpu_milli) return std::nullopt;
    count += members;
  }
  return count;
}

bool IndexSearch::TierNodes(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                            std::span<const MilliCpu> type_cpu_max, GpuTypeId only, std::vector<int32_t>& out) {
  out.clear();
  if (!BuildTiers(ctx, req, type_cpu_max, only, [](const NodeTier&) { return std::optional<int64_t>(0); }))
    return false;
  const size_t num = static_cast<size_t>(ctx.state.cluster().num_nodes());
  if (seen_.size() != num) {
    seen_.assign(num, 0);
    seen_stamp_ = 0;
  }
  if (++seen_stamp_ == 0) {
    std::fill(seen_.begin(), seen_.end(), 0);
    seen_stamp_ = 1;
  }
  // Whole GPUs: each node is in one bucket, so the tiers are disjoint.
  const bool disjoint = req.milli_per_gpu >= kMilliPerGpu;
  for (const Tier& tier : tiers_)
    for (int32_t n = tier.nodes->FindNext(0); n >= 0; n = tier.nodes->FindNext(n + 1))
      if (disjoint || seen_[n] != seen_stamp_) {
        seen_[n] = seen_stamp_;
        out.push_back(n);
      }
  return true;
}

}  // namespace berth::scheduler
