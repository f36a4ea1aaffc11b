// Which fast path decides a task, and what the scan would answer without
// scanning: the one deciding score plugin (Decider), the filters that cannot
// change a choice (OnlyFitFilters), the comparison of GPU types for a score by
// type (PlaceByType) and the verdict counts of a task that fits nowhere
// (CountRejectsFromIndexes). ADRs 0042 and 0044.
#include <algorithm>
#include <optional>

#include "berth/scheduler/scheduler.h"

namespace berth::scheduler {

using framework::CycleContext;
using framework::TaskRequest;

const framework::ScorePlugin* Scheduler::Decider(const CycleContext& ctx, const TaskRequest& req) const {
  const auto& scorers = framework_->score();
  if (!reducible_) return scorers.front().first;
  const framework::ScorePlugin* decider = nullptr;
  for (const auto& [plugin, weight] : scorers) {
    if (weight == 0 || plugin->Neutral(ctx, req)) continue;
    if (weight < 0 || decider != nullptr) return nullptr;
    decider = plugin;
  }
  return decider;
}

std::optional<NodeId> Scheduler::PlaceByType(const CycleContext& ctx, const TaskRequest& req) {
  const framework::ScorePlugin* typed = nullptr;
  const framework::ScorePlugin* bounded = nullptr;
  int64_t typed_weight = 0, bounded_weight = 0;
  for (const auto& [plugin, weight] : framework_->score()) {
    if (weight == 0 || plugin->Neutral(ctx, req)) continue;
    if (weight < 0 || !plugin->NormalizesByRange()) return std::nullopt;
    if (typed == nullptr && plugin->ScoresByType(ctx, req)) {
      typed = plugin;
      typed_weight = weight;
    } else if (bounded == nullptr) {
      bounded = plugin;
      bounded_weight = weight;
    } else {
      return std::nullopt;
    }
  }
  if (typed == nullptr || bounded == nullptr) return std::nullopt;
  const auto& filters = framework_->filter();
  // Each accepted type's best node by the bounded score (ties: lowest rank),
  // leaving out the types a filter that decides by type rejects.
  by_type_.clear();
  const int32_t num_types = static_cast<int32_t>(type_first_node_.size());
  for (int32_t ti = 0; ti < num_types; ++ti) {
    const GpuTypeId t(static_cast<int16_t>(ti));
    if (!req.gpu_types.Accepts(t) || type_first_node_[ti] < 0) continue;
    bool type_out = false;
    for (const framework::FilterPlugin* f : filters)
      if (f->FiltersByType(ctx, req) && !f->Filter(ctx, req, NodeId(type_first_node_[ti]))) {
        type_out = true;
        break;
      }
    if (type_out) continue;
    std::optional<NodeId> n = index_search_.Find(ctx, req, *bounded, filters, type_cpu_max_, t);
    if (!index_search_.applicable()) return std::nullopt;
    if (n) by_type_.push_back({*n, bounded->Score(ctx, req, *n), typed->Score(ctx, req, *n)});
  }
  if (by_type_.empty()) return std::nullopt;  // the scan gives the verdict
  // One type: the typed score is equal on every feasible node, so the bounded
  // one decides, and only its highest raw score normalizes highest.
  if (by_type_.size() == 1) return by_type_.front().node;
  // The scan normalizes the bounded score over every feasible node: only the
  // least and greatest raw score matter (NormalizesByRange).
  std::optional<int64_t> lowest;
  for (const TypeBest& b : by_type_) {
    std::optional<int64_t> low = index_search_.FindLowest(ctx, req, *bounded, filters, type_cpu_max_, cluster_.node(b.node).gpu_type);
    if (!low) return std::nullopt;
    lowest = lowest ? std::min(*lowest, *low) : *low;
  }
  const size_t m = by_type_.size();
  norm_nodes_.clear();
  norm_typed_.clear();
  for (const TypeBest& b : by_type_) {
    norm_nodes_.push_back(b.node);
    norm_typed_.push_back(b.typed);
  }
  typed->Normalize(ctx, req, norm_nodes_, norm_typed_);
  // The bounded scores: each type's best, one below it (a node of the type
  // scoring less must normalize lower, or a tie there could go by rank to
  // another node), and the lowest.
  norm_scores_.clear();
  for (const TypeBest& b : by_type_) norm_scores_.push_back(b.bounded);
  for (const TypeBest& b : by_type_) norm_scores_.push_back(std::max(*lowest, b.bounded - 1));
  norm_scores_.push_back(*lowest);
  norm_nodes_.resize(norm_scores_.size(), by_type_.front().node);
  bounded->Normalize(ctx, req, norm_nodes_, norm_scores_);
  size_t bi = 0;
  int64_t best_total = 0;
  for (size_t i = 0; i < m; ++i) {
    if (by_type_[i].bounded > *lowest && norm_scores_[m + i] >= norm_scores_[i]) return std::nullopt;
    const int64_t total = typed_weight * norm_typed_[i] + bounded_weight * norm_scores_[i];
    if (i == 0 || total > best_total ||
        (total == best_total && ctx.RankOf(by_type_[i].node) < ctx.RankOf(by_type_[bi].node))) {
      bi = i;
      best_total = total;
    }
  }
  return by_type_[bi].node;
}

bool Scheduler::CountRejectsFromIndexes(const CycleContext& ctx, const TaskRequest& req) {
  const auto& filters = framework_->filter();
  if (filters.empty() || filters.front()->Name() != "fit") return false;
  for (size_t f = 1; f < filters.size(); ++f)
    if (!filters[f]->FiltersByType(ctx, req) && !filters[f]->PassesEveryNode(ctx, req)) return false;
  std::fill(reject_count_.begin(), reject_count_.end(), 0);
  // What passes fit depends only on the state and the request: kept while
  // neither changes (the blocked jobs of a pass ask alike).
  const int32_t num_types = static_cast<int32_t>(type_first_node_.size());
  const auto same = [](const TaskRequest& a, const TaskRequest& b) {
    return a.gpus == b.gpus && a.milli_per_gpu == b.milli_per_gpu && a.cpu_milli == b.cpu_milli &&
           a.memory_mib == b.memory_mib && a.gpu_types == b.gpu_types &&
           a.gpu_types_unknown == b.gpu_types_unknown && a.gpu_memory_mib == b.gpu_memory_mib;
  };
  if (fit_memo_version_ != state_.version() || !same(fit_memo_req_, req) || fit_memo_up_ < 0) {
    fit_memo_version_ = state_.version();
    fit_memo_req_ = req;
    fit_memo_.assign(static_cast<size_t>(num_types), -1);
    fit_memo_up_ = 0;
    const int32_t num = cluster_.num_nodes();
    for (int32_t i = 0; i < num; ++i) fit_memo_up_ += state_.up(NodeId(i)) ? 1 : 0;
  }
  int32_t past_fit = 0;
  for (int32_t ti = 0; ti < num_types; ++ti) {
    const GpuTypeId t(static_cast<int16_t>(ti));
    if (!req.gpu_types.Accepts(t) || type_first_node_[ti] < 0) continue;
    int32_t& pass_fit = fit_memo_[ti];
    if (pass_fit < 0) {
      if (std::optional<int32_t> by_buckets = index_search_.CountFitsByBuckets(state_, req, t)) {
        pass_fit = *by_buckets;
      } else {
        if (!index_search_.TierNodes(ctx, req, type_cpu_max_, t, tier_nodes_)) return false;
        pass_fit = 0;
        for (int32_t n : tier_nodes_)
          if (state_.up(NodeId(n)) && filters.front()->Filter(ctx, req, NodeId(n))) ++pass_fit;
      }
    }
    if (pass_fit == 0) continue;
    size_t first_fail = 0;
    for (size_t f = 1; f < filters.size() && first_fail == 0; ++f)
      if (!filters[f]->PassesEveryNode(ctx, req) && !filters[f]->Filter(ctx, req, NodeId(type_first_node_[ti])))
        first_fail = f;
    if (first_fail == 0) return false;  // nodes of this type may pass: leave it to the scan
    reject_count_[first_fail] += pass_fit;
    past_fit += pass_fit;
  }
  reject_count_.front() = fit_memo_up_ - past_fit;
  reject_count_.back() = cluster_.num_nodes() - fit_memo_up_;
  return true;
}

bool Scheduler::OnlyFitFilters(const CycleContext& ctx, const TaskRequest& req) const {
  for (const auto* f : extra_filters_)
    if (!f->PassesEveryNode(ctx, req)) return false;
  return true;
}

}  // namespace berth::scheduler
