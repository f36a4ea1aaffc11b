// The class score cache (see class_score_cache.h).
#include "berth/scheduler/class_score_cache.h"

#include <algorithm>

namespace berth::scheduler {

size_t ClassScoreCache::ClassesFor(int32_t num_nodes) {
  return std::clamp(kNodeSlots / static_cast<size_t>(std::max(num_nodes, 1)), kMinClasses, kMaxClasses);
}

std::optional<NodeId> ClassScoreCache::Find(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                                            const framework::ScorePlugin& scorer,
                                            std::span<framework::FilterPlugin* const> filters) {
  size_t at = slots_.size();
  if (last_ < slots_.size() && slots_[last_].cache.Holds(req)) {
    at = last_;
  } else {
    for (size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].cache.Holds(req)) {
        at = i;
        break;
      }
  }
  int64_t built = 0;
  if (at == slots_.size()) {
    if (slots_.size() < ClassesFor(ctx.state.cluster().num_nodes())) {
      slots_.emplace_back();
    } else {
      at = 0;
      for (size_t i = 1; i < slots_.size(); ++i)
        if (slots_[i].last_use < slots_[at].last_use) at = i;
    }
    slots_[at].cache.Build(ctx, req, scorer, filters);
    built = slots_[at].cache.visited();
    ++builds_;
  }
  last_ = at;
  slots_[at].last_use = ++uses_;
  std::optional<NodeId> best = slots_[at].cache.Find(ctx, req, scorer, filters);
  visited_ = built + slots_[at].cache.visited();
  return best;
}

}  // namespace berth::scheduler
