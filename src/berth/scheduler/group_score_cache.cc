// The group score cache (see group_score_cache.h).
#include "berth/scheduler/group_score_cache.h"

#include <bit>
#include <cassert>

#include "berth/common/bits.h"

namespace berth::scheduler {

namespace {

bool SameRequest(const framework::TaskRequest& a, const framework::TaskRequest& b) {
  return a.gpus == b.gpus && a.milli_per_gpu == b.milli_per_gpu && a.cpu_milli == b.cpu_milli &&
         a.memory_mib == b.memory_mib && a.gpu_types == b.gpu_types && a.gpu_types_unknown == b.gpu_types_unknown &&
         a.gpu_memory_mib == b.gpu_memory_mib;
}

}  // namespace

bool GroupScoreCache::Holds(const framework::TaskRequest& req) const { return valid_ && SameRequest(req, req_); }

int32_t GroupScoreCache::Better(int32_t a, int32_t b) const {
  if (a < 0) return b;
  if (b < 0) return a;
  if (score_[a] != score_[b]) return score_[a] > score_[b] ? a : b;
  return rank_[a] <= rank_[b] ? a : b;
}

void GroupScoreCache::Rescore(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                              const framework::ScorePlugin& scorer,
                              std::span<framework::FilterPlugin* const> filters, int32_t n) {
  const NodeId node(n);
  uint8_t reason = pass_;
  if (!ctx.state.up(node)) {
    reason = static_cast<uint8_t>(filters.size());
  } else {
    for (size_t f = 0; f < filters.size(); ++f)
      if (!filters[f]->Filter(ctx, req, node)) {
        reason = static_cast<uint8_t>(f);
        break;
      }
  }
  if (uniform_ && (reason_[n] == pass_) != (reason == pass_)) SetFeasibleBit(n, reason == pass_);
  --reason_count_[reason_[n]];
  ++reason_count_[reason];
  reason_[n] = reason;
  if (reason == pass_) score_[n] = scorer.Score(ctx, req, node);
  ++visited_;
}

void GroupScoreCache::SetFeasibleBit(int32_t n, bool on) {
  const size_t w = static_cast<size_t>(n) / 64;
  const uint64_t bit = uint64_t{1} << (n % 64);
  if (on) {
    feasible_bits_[w] |= bit;
  } else {
    feasible_bits_[w] &= ~bit;
  }
  for (size_t i = w + 1; i < word_fenwick_.size(); i += i & (~i + 1)) word_fenwick_[i] += on ? 1 : -1;
}

int32_t GroupScoreCache::KthFeasible(int64_t k) const {
  // Descend the Fenwick tree to the word holding the k-th passing node.
  size_t at = 0;
  size_t step = 1;
  while (step * 2 < word_fenwick_.size()) step *= 2;
  for (; step > 0; step /= 2) {
    const size_t next = at + step;
    if (next < word_fenwick_.size() && word_fenwick_[next] <= k) {
      at = next;
      k -= word_fenwick_[next];
    }
  }
  // Word `at` (0-based) holds it: drop its k lowest set bits.
  uint64_t bits = feasible_bits_[at];
  for (; k > 0; --k) bits &= bits - 1;
  return static_cast<int32_t>(at * 64) + std::countr_zero(bits);
}

void GroupScoreCache::Replay(int32_t n) {
  size_t i = leaves_ + static_cast<size_t>(n);
  tree_[i] = Feasible(n) ? n : -1;
  for (i /= 2; i >= 1; i /= 2) tree_[i] = Better(tree_[2 * i], tree_[2 * i + 1]);
}

void GroupScoreCache::Build(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                            const framework::ScorePlugin& scorer,
                            std::span<framework::FilterPlugin* const> filters) {
  assert(filters.size() + 1 < 255);
  const int32_t num = ctx.state.cluster().num_nodes();
  visited_ = 0;
  req_ = req;
  pass_ = static_cast<uint8_t>(filters.size() + 1);
  score_.assign(num, 0);
  rank_.resize(num);
  reason_.assign(num, pass_);
  reason_count_.assign(filters.size() + 2, 0);
  reason_count_[pass_] = num;
  dirty_mark_.assign(num, 0);
  dirty_.clear();
  leaves_ = 1;
  while (leaves_ < static_cast<size_t>(num)) leaves_ *= 2;
  tree_.assign(2 * leaves_, -1);
  // For a uniform draw, every node starts passing (reason_ above): all bits
  // set, the counts full.
  uniform_ = scorer.UniformPick();
  const size_t words = uniform_ ? (static_cast<size_t>(num) + 63) / 64 : 0;
  feasible_bits_.assign(words, ~uint64_t{0});
  if (words > 0 && num % 64) feasible_bits_.back() = (uint64_t{1} << (num % 64)) - 1;
  word_fenwick_.assign(words + 1, 0);
  for (size_t i = 1; i <= words; ++i) {
    word_fenwick_[i] += PopCount(feasible_bits_[i - 1]);
    const size_t up = i + (i & (~i + 1));
    if (up <= words) word_fenwick_[up] += word_fenwick_[i];
  }
  for (int32_t n = 0; n < num; ++n) {
    rank_[n] = ctx.RankOf(NodeId(n));
    Rescore(ctx, req, scorer, filters, n);
    tree_[leaves_ + n] = Feasible(n) ? n : -1;
  }
  for (size_t i = leaves_ - 1; i >= 1; --i) tree_[i] = Better(tree_[2 * i], tree_[2 * i + 1]);
  valid_ = true;
}

std::optional<NodeId> GroupScoreCache::Find(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                                            const framework::ScorePlugin& scorer,
                                            std::span<framework::FilterPlugin* const> filters) {
  visited_ = 0;
  if (!Holds(req)) return std::nullopt;
  for (int32_t n : dirty_) {
    dirty_mark_[n] = 0;
    Rescore(ctx, req, scorer, filters, n);
    Replay(n);
  }
  dirty_.clear();
  if (uniform_) {
    // The scan's draw: one rng.Uniform(m) over the m passing nodes in node
    // order, none when only one passes.
    const int64_t m = reason_count_[pass_];
    if (m == 0) return std::nullopt;
    const int64_t k = m == 1 ? 0 : static_cast<int64_t>(ctx.rng.Uniform(static_cast<uint64_t>(m)));
    return NodeId(KthFeasible(k));
  }
  const int32_t best = tree_[1];
  if (best < 0) return std::nullopt;
  return NodeId(best);
}

}  // namespace berth::scheduler
