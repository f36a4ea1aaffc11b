// Berth's victim choice (see victim_search.h).
#include "berth/plugins/preempt/victim_search.h"

#include <algorithm>
#include <array>
#include <bit>

#include "berth/common/bits.h"

namespace berth::plugins::preempt {

using framework::RunningJob;

bool VictimSearch::Worse(const Option& a, const Option& b) {
  if (a.ratio != b.ratio) return a.ratio > b.ratio;
  if (a.gain != b.gain) return a.gain < b.gain;
  if (a.count != b.count) return a.count > b.count;
  return a.node > b.node;
}

void VictimSearch::Attach(const framework::PreemptContext& ctx, const GangNeed& need, Eligibility& elig) {
  view_ = &ctx.view;
  elig_ = &elig;
  primary_ = need.shapes.front();
  indexed_ = false;
  const state::ClusterState& state = ctx.view.state;
  const int32_t nodes = state.cluster().num_nodes();
  room_.Attach(state, ctx.ruled_out);
  base_slots_.resize(nodes);
  max_slots_.resize(nodes);
  cur_slots_.resize(nodes);
  version_.resize(nodes, 0);
  stamp_.resize(nodes, 0);
  visited_.resize(nodes, 0);
  selected_.assign(elig.candidates().size(), 0);
}

bool VictimSearch::IndexNode(int32_t n) {
  const state::ClusterState& state = view_->state;
  const NodeId node(n);
  base_slots_[n] = room_.Slots(node, primary_);
  max_slots_[n] = base_slots_[n];
  cur_slots_[n] = base_slots_[n];
  if (!state.up(node)) return false;
  const auto on = elig_->On(n);
  if (on.empty()) return false;
  std::array<int32_t, cluster::kMaxGpusPerNode> milli;
  uint64_t whole = 0;  // GPUs of whole-GPU tasks: free once they go
  bool shares = false;
  MilliCpu cpu = 0;
  MiB mem = 0;
  for (const auto& a : on) {
    if (a.milli_per_gpu == kMilliPerGpu) {
      whole |= a.gpu_mask;
    } else {
      if (!shares) std::fill_n(milli.begin(), state.cluster().node(node).gpu_count, 0);
      shares = true;
      for (uint64_t m = a.gpu_mask; m; m &= m - 1) milli[std::countr_zero(m)] += a.milli_per_gpu;
    }
    cpu += a.cpu;
    mem += a.mem;
  }
  if (shares) whole |= room_.MaskWithExtra(node, milli.data());
  max_slots_[n] = room_.SlotsWith(node, primary_, whole, cpu, mem);
  return max_slots_[n] > base_slots_[n];
}

void VictimSearch::IndexAll() {
  if (indexed_) return;
  indexed_ = true;
  const int32_t nodes = view_->state.cluster().num_nodes();
  // Slots of the widest shape per node now, and with every candidate gone.
  base_prefix_.assign(nodes + 1, 0);
  max_prefix_.assign(nodes + 1, 0);
  bound_begin_.assign(nodes + 1, 0);
  bound_.clear();
  const CandidatesByNode& by_node = elig_->by_node();
  for (int32_t n = 0; n < nodes; ++n) {
    if (IndexNode(n)) NodeBounds(n, by_node.On(n));
    bound_begin_[n + 1] = static_cast<int32_t>(bound_.size());
    base_prefix_[n + 1] = base_prefix_[n] + base_slots_[n];
    max_prefix_[n + 1] = max_prefix_[n] + max_slots_[n];
  }
}

void VictimSearch::NodeBounds(int32_t n, std::span<const CandidatesByNode::Entry> on) {
  if (primary_.gpus == 0) {  // CPU-only tasks: no GPU bound
    for (int32_t s = base_slots_[n]; s < max_slots_[n]; ++s) bound_.push_back(0);
    return;
  }
  // Each candidate's cost spread over the milli-GPU it holds anywhere.
  const auto cands = elig_->candidates();
  shares_.clear();
  for (size_t e = 0; e < on.size();) {
    const int32_t c = on[e].cand;
    int64_t held = 0;
    for (; e < on.size() && on[e].cand == c; ++e) held += on[e].milli();
    const int64_t total = cands[c].milli;
    if (held > 0 && total > 0) shares_.push_back({cands[c].cost / static_cast<double>(total), held});
  }
  // A handful per node: insertion sort.
  for (size_t i = 1; i < shares_.size(); ++i)
    for (size_t k = i; k > 0 && shares_[k].per_milli < shares_[k - 1].per_milli; --k) std::swap(shares_[k], shares_[k - 1]);
  // f(d): the least cost of giving back d milli-GPU on the node, fractionally.
  size_t i = 0;
  int64_t used_in_i = 0, given = 0;
  double cost = 0;
  auto f = [&](int64_t d) {
    while (given < d && i < shares_.size()) {
      const int64_t take = std::min(d - given, shares_[i].milli - used_in_i);
      cost += static_cast<double>(take) * shares_[i].per_milli;
      given += take;
      used_in_i += take;
      if (used_in_i == shares_[i].milli) {
        ++i;
        used_in_i = 0;
      }
    }
    return cost;
  };
  const int64_t free = PopCount(room_.FreeMask(NodeId(n)));
  double prev = 0;
  for (int32_t s = base_slots_[n] + 1; s <= max_slots_[n]; ++s) {
    const double now = f(std::max<int64_t>(0, int64_t{s} * primary_.gpus - free) * kMilliPerGpu);
    bound_.push_back(now - prev);
    prev = now;
  }
}

double VictimSearch::DomainBound(int32_t begin, int32_t end, int64_t missing) {
  if (missing <= 0) return 0;
  if (missing == 1) {  // the least slot bound: no copy
    const int32_t b = bound_begin_[begin], e = bound_begin_[end];
    if (e == b) return 0;  // cannot say
    return *std::min_element(bound_.begin() + b, bound_.begin() + e);
  }
  bound_scratch_.assign(bound_.begin() + bound_begin_[begin], bound_.begin() + bound_begin_[end]);
  if (static_cast<int64_t>(bound_scratch_.size()) < missing) return 0;  // cannot say
  std::nth_element(bound_scratch_.begin(), bound_scratch_.begin() + (missing - 1), bound_scratch_.end());
  double sum = 0;
  for (int64_t k = 0; k < missing; ++k) sum += bound_scratch_[k];
  return sum;
}

std::optional<VictimSet> VictimSearch::Find(const framework::PreemptContext& ctx, const GangNeed& need,
                                            Eligibility& elig) {
  Attach(ctx, need, elig);
  const cluster::Cluster& cluster = ctx.view.state.cluster();
  const auto cap = static_cast<int>(ctx.job.required_level.value_or(cluster::Level::kRegion));
  const bool single = need.shapes.size() == 1;
  for (int l = cluster::kNumLevels - 1; l >= cap; --l) {
    const auto level = static_cast<cluster::Level>(l);
    if (need.gpus > cluster.max_domain_gpus(level)) continue;
    if (level == cluster::Level::kNvlink && cluster.single_node_nvlink() &&
        cluster.domains_at(level).size() == static_cast<size_t>(cluster.num_nodes()) && single &&
        primary_.gpus > 0 && elig.per_node() && !elig.shares()) {
      std::optional<VictimSet> best;
      if (FindOnNodes(need, elig, best)) {
        ++decided_on_nodes_;
        if (best) return best;
        continue;
      }
    }
    IndexAll();
    // The domains that could hold the gang, cheapest bound first.
    ranked_.clear();
    for (DomainId d : cluster.domains_at(level)) {
      const cluster::Domain& dom = cluster.domain(d);
      const int32_t b = dom.begin.value(), e = dom.end.value();
      if (max_prefix_[e] - max_prefix_[b] < primary_.count) continue;
      const int64_t missing = primary_.count - (base_prefix_[e] - base_prefix_[b]);
      if (single && missing <= 0) continue;  // fits already: not for want of room
      ranked_.push_back({DomainBound(b, e, missing), d.value()});
    }
    // Taken from a heap in (bound, domain) order: the search usually stops
    // after a few of thousands of domains, so they are not sorted in full.
    auto after = [](const Ranked& a, const Ranked& b) {
      return a.bound != b.bound ? a.bound > b.bound : a.domain > b.domain;
    };
    std::make_heap(ranked_.begin(), ranked_.end(), after);
    std::optional<VictimSet> best;
    for (size_t left = ranked_.size(); left > 0;) {
      std::pop_heap(ranked_.begin(), ranked_.begin() + static_cast<std::ptrdiff_t>(left), after);
      const Ranked r = ranked_[--left];
      if (best && r.bound > best->cost * (1 + 1e-9) + 1e-9) break;  // no later domain can beat it
      const cluster::Domain& dom = cluster.domain(DomainId(r.domain));
      std::optional<VictimSet> set = SearchDomain(need, elig, dom.begin.value(), dom.end.value());
      if (!set) continue;
      if (!best || set->cost < best->cost ||
          (set->cost == best->cost && (set->victims.size() < best->victims.size() ||
                                       (set->victims.size() == best->victims.size() && r.domain < best->domain.value())))) {
        set->domain = DomainId(r.domain);
        set->level = level;
        best = std::move(set);
      }
    }
    if (best) return best;
  }
  return std::nullopt;
}

std::optional<VictimSet> VictimSearch::FindIn(const framework::PreemptContext& ctx, const GangNeed& need,
                                              Eligibility& elig, int32_t begin, int32_t end) {
  Attach(ctx, need, elig);
  IndexAll();
  return SearchDomain(need, elig, begin, end);
}

bool VictimSearch::Better(const VictimSet& a, const std::optional<VictimSet>& best) {
  if (!best) return true;
  if (a.cost != best->cost) return a.cost < best->cost;
  if (a.victims.size() != best->victims.size()) return a.victims.size() < best->victims.size();
  return a.domain.value() < best->domain.value();
}

bool VictimSearch::FindOnNodes(const GangNeed& need, Eligibility& elig, std::optional<VictimSet>& best) {
  const state::ClusterState& state = view_->state;
  const cluster::Cluster& cluster = state.cluster();
  const auto& domains = cluster.domains_at(cluster::Level::kNvlink);
  const auto cands = elig.candidates();
  const int32_t g = primary_.gpus;
  ++visit_now_;
  int32_t searched = 0;
  // Searches node n's domain once, as Find's loop would (same skips).
  auto visit = [&](int32_t n) {
    if (visited_[n] == visit_now_) return;
    visited_[n] = visit_now_;
    if (!IndexNode(n) || max_slots_[n] < primary_.count || base_slots_[n] >= primary_.count) return;
    ++searched;
    std::optional<VictimSet> set = SearchDomain(need, elig, n, n + 1);
    if (!set) return;
    set->domain = domains[n];
    set->level = cluster::Level::kNvlink;
    if (Better(*set, best)) best = std::move(set);
  };
  // Nodes with g whole GPUs free (short of CPU or memory): their bound may be 0.
  int32_t free_nodes = 0;
  for (int32_t t = 0; t < static_cast<int32_t>(cluster.gpu_types().size()); ++t) {
    const GpuTypeId type(static_cast<int16_t>(t));
    if (!primary_.types.Accepts(type)) continue;
    for (int k = g; k <= state.max_full_free(type); ++k) {
      const DenseBitset& set = state.nodes_with_full_free(type, k);
      for (int32_t n = set.FindNext(0); n >= 0; n = set.FindNext(n + 1)) {
        if (++free_nodes > kMaxVisits) return false;
        visit(n);
      }
    }
  }
  // The cheapest candidates per milli-GPU first: their nodes' bounds are likely the least.
  constexpr int kSeeds = 4;
  std::array<std::pair<double, int32_t>, kSeeds> seeds;
  int seeded = 0;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (cands[i].milli <= 0) continue;
    const std::pair<double, int32_t> key{cands[i].cost / static_cast<double>(cands[i].milli), static_cast<int32_t>(i)};
    if (seeded < kSeeds) {
      seeds[seeded++] = key;
    } else if (key < seeds[kSeeds - 1]) {
      seeds[kSeeds - 1] = key;
    } else {
      continue;
    }
    for (int k = seeded - 1; k > 0 && seeds[k] < seeds[k - 1]; --k) std::swap(seeds[k], seeds[k - 1]);
  }
  const auto& running = view_->running;
  for (int k = 0; k < seeded; ++k)
    for (const auto& p : running[cands[seeds[k].second].run].placements) visit(p.alloc.node.value());
  if (!best) return false;
  // Any other node whose bound could reach the best set: its bound is at
  // least (g - its free GPUs) x 1000 x the least cost per milli-GPU of a
  // candidate holding GPUs there (no shares: every slot lacks whole GPUs).
  auto threshold = [&] { return best->cost * (1 + 1e-9) + 1e-9; };
  constexpr double kSlack = 1 - 1e-12;  // rounding of the bound's sum
  for (size_t i = 0; i < cands.size(); ++i) {
    const Candidate& c = cands[i];
    if (c.milli <= 0) continue;
    const double per_gpu = c.cost / static_cast<double>(c.milli) * kMilliPerGpu * kSlack;
    if (per_gpu > threshold()) continue;
    for (const auto& p : running[c.run].placements) {
      const int32_t n = p.alloc.node.value();
      if (visited_[n] == visit_now_ || p.alloc.gpu_mask == 0) continue;
      const int32_t lacking = std::max(1, g - PopCount(state.full_free_mask(p.alloc.node)));
      if (per_gpu * lacking > threshold()) continue;
      if (searched >= kMaxVisits) return false;
      visit(n);
    }
  }
  return true;
}

bool VictimSearch::Done(const GangNeed& need, int32_t begin, int32_t end) const {
  if (total_ < primary_.count) return false;
  return need.shapes.size() == 1 || room_.Fits(need, begin, end);
}

void VictimSearch::Apply(int32_t cand, int sign, int32_t begin, int32_t end) {
  const Candidate& c = elig_->candidates()[cand];
  changed_.clear();
  room_.Evict(view_->running[c.run], sign, begin, end, &changed_);
  ++stamp_now_;
  size_t w = 0;
  for (int32_t n : changed_) {
    if (stamp_[n] == stamp_now_) continue;
    stamp_[n] = stamp_now_;
    changed_[w++] = n;
    const int32_t now = room_.Slots(NodeId(n), primary_);
    total_ += now - cur_slots_[n];
    cur_slots_[n] = now;
    ++version_[n];
  }
  changed_.resize(w);
}

std::optional<VictimSearch::Option> VictimSearch::BestOption(int32_t node, int64_t missing, Eligibility& elig) {
  const auto cands = elig.candidates();
  const auto& running = view_->running;
  groups_.clear();
  const auto on = elig.On(node);
  for (size_t e = 0; e < on.size();) {
    const int32_t c = on[e].cand;
    size_t end = e;
    int64_t held = 0;
    for (; end < on.size() && on[end].cand == c; ++end) held += on[end].milli();
    if (!selected_[c] && elig.CanTake(cands[c]))
      groups_.push_back({cands[c].cost / static_cast<double>(std::max<int64_t>(held, 1)),
                         running[cands[c].run].spec->id.value(), c, e, end});
    e = end;
  }
  if (groups_.empty()) return std::nullopt;
  std::sort(groups_.begin(), groups_.end(),
            [](const Group& a, const Group& b) { return a.key != b.key ? a.key < b.key : a.id < b.id; });
  // Evict the node's candidates in that order, tentatively, and keep the
  // prefix with the least cost per slot gained anywhere in the domain (a
  // victim spread over several nodes gains on each).
  double cost = 0;
  const size_t first = option_victims_.size();
  std::optional<Option> best;
  ++stamp_now_;
  gained_nodes_.clear();
  for (const Group& g : groups_) {
    const Candidate& c = cands[g.cand];
    if (!elig.CanTake(c)) continue;
    elig.Take(c, +1);
    option_victims_.push_back(g.cand);
    changed_.clear();
    room_.Evict(running[c.run], +1, begin_, end_, &changed_);
    for (int32_t n : changed_) {
      if (stamp_[n] == stamp_now_) continue;
      stamp_[n] = stamp_now_;
      gained_nodes_.push_back(n);
    }
    cost += c.cost;
    int64_t gained = 0;
    for (int32_t n : gained_nodes_) gained += room_.Slots(NodeId(n), primary_) - cur_slots_[n];
    const auto gain = static_cast<int32_t>(std::min<int64_t>(gained, missing));
    if (gain > 0) {
      const double ratio = cost / gain;
      const auto count = static_cast<int32_t>(option_victims_.size() - first);
      if (!best || ratio < best->ratio || (ratio == best->ratio && gain > best->gain))
        best = Option{ratio, gain, node, version_[node], static_cast<int32_t>(first), count};
    }
    if (gained >= missing) break;
  }
  for (size_t i = option_victims_.size(); i-- > first;) {
    const Candidate& c = cands[option_victims_[i]];
    elig.Take(c, -1);
    room_.Evict(running[c.run], -1, begin_, end_);
  }
  if (!best) {
    option_victims_.resize(first);
    return std::nullopt;
  }
  option_victims_.resize(first + best->count);
  return best;
}

std::optional<VictimSet> VictimSearch::SearchDomain(const GangNeed& need, Eligibility& elig, int32_t begin,
                                                    int32_t end) {
  room_.Clear();
  elig.Reset();
  begin_ = begin;
  end_ = end;
  chosen_.clear();
  heap_.clear();
  option_victims_.clear();
  total_ = 0;
  for (int32_t n = begin; n < end; ++n) total_ += base_slots_[n];
  auto missing = [&]() -> int64_t { return std::max<int64_t>(1, primary_.count - total_); };
  auto push = [&](const Option& o) {
    heap_.push_back(o);
    std::push_heap(heap_.begin(), heap_.end(), Worse);
  };
  for (int32_t n = begin; n < end; ++n)
    if (max_slots_[n] > cur_slots_[n])
      if (auto o = BestOption(n, missing(), elig)) push(*o);

  bool ok = Done(need, begin, end);
  while (!ok && !heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), Worse);
    const Option top = heap_.back();
    heap_.pop_back();
    if (top.version != version_[top.node]) continue;  // superseded by a fresher option
    std::optional<Option> o = BestOption(top.node, missing(), elig);
    if (!o) continue;
    if (!heap_.empty() && Worse(*o, heap_.front())) {
      push(*o);  // worse than it looked: another node first
      continue;
    }
    const std::vector<int32_t> victims(option_victims_.begin() + o->first,
                                       option_victims_.begin() + o->first + o->count);
    for (int32_t c : victims) {
      if (selected_[c]) continue;
      selected_[c] = 1;
      chosen_.push_back(c);
      elig.Take(elig.candidates()[c], +1);
      Apply(c, +1, begin, end);
      refresh_.assign(changed_.begin(), changed_.end());  // BestOption reuses changed_
      for (int32_t n : refresh_)
        if (max_slots_[n] > cur_slots_[n])
          if (auto again = BestOption(n, missing(), elig)) push(*again);
    }
    ok = Done(need, begin, end);
  }

  std::optional<VictimSet> result;
  if (ok && !chosen_.empty()) {
    // Prune, most expensive first: fitting is monotone, so one pass leaves a minimal set.
    const auto cands = elig.candidates();
    std::vector<int32_t> order = chosen_;
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      if (cands[a].cost != cands[b].cost) return cands[a].cost > cands[b].cost;
      return view_->running[cands[a].run].spec->id > view_->running[cands[b].run].spec->id;
    });
    for (int32_t c : order) {
      Apply(c, -1, begin, end);
      if (Done(need, begin, end)) {
        selected_[c] = 0;
        elig.Take(cands[c], -1);
      } else {
        Apply(c, +1, begin, end);
      }
    }
    result.emplace();
    for (int32_t c : chosen_) {
      if (!selected_[c]) continue;
      result->victims.push_back(cands[c].run);
      result->cost += cands[c].cost;
    }
    std::sort(result->victims.begin(), result->victims.end(), [&](int32_t a, int32_t b) {
      return view_->running[a].spec->id < view_->running[b].spec->id;
    });
  }
  // Back to the base state for the next domain.
  for (int32_t n : room_.Touched()) {
    cur_slots_[n] = base_slots_[n];
    ++version_[n];
  }
  for (int32_t c : chosen_) selected_[c] = 0;
  chosen_.clear();
  room_.Clear();
  elig.Reset();
  return result;
}

}  // namespace berth::plugins::preempt
