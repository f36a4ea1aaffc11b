// The lowest-priority-first baseline (see lowest_priority.h).
#include "berth/plugins/preempt/lowest_priority.h"

#include <algorithm>
#include <array>
#include <bit>

namespace berth::plugins::preempt {

bool LowestPriorityFirst::Better(const Pick& a, const Pick& b) {
  if (a.top_priority != b.top_priority) return a.top_priority < b.top_priority;
  if (a.priority_sum != b.priority_sum) return a.priority_sum < b.priority_sum;
  if (a.count != b.count) return a.count < b.count;
  if (a.top_start != b.top_start) return a.top_start > b.top_start;
  return a.node < b.node;
}

bool LowestPriorityFirst::NodePick(int32_t node, const TaskShape& shape, Eligibility& elig, Pick& out) {
  const auto on = elig.by_node().On(node);
  if (on.empty()) return false;
  const NodeId n(node);
  if (!view_->state.up(n)) return false;
  const auto& nd = view_->state.cluster().node(n);
  if (shape.gpus > 0 && (nd.gpu_count < shape.gpus || !shape.types.Accepts(nd.gpu_type))) return false;
  const auto cands = elig.candidates();
  const auto& running = view_->running;
  groups_.clear();
  for (size_t e = 0; e < on.size();) {
    const int32_t c = on[e].cand;
    size_t end = e;
    while (end < on.size() && on[end].cand == c) ++end;
    if (!selected_[c]) {
      const auto& v = running[cands[c].run];
      groups_.push_back({v.priority, v.start_time, v.id.value(), c, e, end});
    }
    e = end;
  }
  if (groups_.empty()) return false;
  std::sort(groups_.begin(), groups_.end(), [](const Group& a, const Group& b) {
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.start != b.start) return a.start > b.start;
    return a.id < b.id;
  });
  std::array<int32_t, cluster::kMaxGpusPerNode> milli{};
  MilliCpu cpu = 0;
  MiB mem = 0;
  out = Pick{};
  out.node = node;
  bool fits = false;
  for (const Group& g : groups_) {
    const Candidate& c = cands[g.cand];
    if (!elig.CanTake(c)) continue;
    elig.Take(c, +1);
    out.victims.push_back(g.cand);
    for (size_t e = g.begin; e < g.end; ++e) {
      const auto& a = on[e];
      for (uint64_t m = a.gpu_mask; m; m &= m - 1) milli[std::countr_zero(m)] += a.milli_per_gpu;
      cpu += a.cpu;
      mem += a.mem;
    }
    if (room_.SlotsWith(n, shape, room_.MaskWithExtra(n, milli.data()), cpu, mem) >= 1) {
      fits = true;
      break;
    }
  }
  for (int32_t c : out.victims) elig.Take(cands[c], -1);
  if (!fits) return false;
  out.count = static_cast<int32_t>(out.victims.size());
  out.top_priority = INT32_MIN;
  for (int32_t c : out.victims) {
    const auto& v = running[cands[c].run];
    out.priority_sum += v.priority;
    if (v.priority > out.top_priority) {
      out.top_priority = v.priority;
      out.top_start = v.start_time;
    } else if (v.priority == out.top_priority) {
      out.top_start = std::min(out.top_start, v.start_time);
    }
  }
  return true;
}

std::optional<std::vector<int32_t>> LowestPriorityFirst::Find(const framework::PreemptContext& ctx,
                                                              const GangNeed& need, Eligibility& elig) {
  view_ = &ctx.view;
  const state::ClusterState& state = ctx.view.state;
  const int32_t nodes = state.cluster().num_nodes();
  room_.Attach(state, ctx.ruled_out);
  elig.Reset();
  const auto cands = elig.candidates();
  selected_.assign(cands.size(), 0);
  std::vector<int32_t> chosen;
  Pick best, pick;
  for (const TaskShape& shape : need.shapes) {
    for (int32_t t = 0; t < shape.count; ++t) {
      int32_t home = -1;
      for (int32_t n = 0; n < nodes && home < 0; ++n)
        if (room_.Slots(NodeId(n), shape) >= 1) home = n;
      if (home < 0) {
        bool found = false;
        for (int32_t n = 0; n < nodes; ++n) {
          if (!NodePick(n, shape, elig, pick)) continue;
          if (!found || Better(pick, best)) std::swap(best, pick);
          found = true;
        }
        if (!found) return std::nullopt;
        for (int32_t c : best.victims) {
          selected_[c] = 1;
          chosen.push_back(c);
          elig.Take(cands[c], +1);
          room_.Evict(ctx.view.running[cands[c].run], +1, 0, nodes);
        }
        home = best.node;
      }
      room_.Reserve(NodeId(home), shape);
    }
  }
  if (chosen.empty()) return std::nullopt;  // the gang fits without evictions: not for want of room
  std::vector<int32_t> victims;
  for (int32_t c : chosen) victims.push_back(cands[c].run);
  std::sort(victims.begin(), victims.end(),
            [&](int32_t a, int32_t b) { return ctx.view.running[a].spec->id < ctx.view.running[b].spec->id; });
  return victims;
}

}  // namespace berth::plugins::preempt
