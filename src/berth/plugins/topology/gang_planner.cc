// Topology-aware gang planning (see gang_planner.h).
#include "berth/plugins/topology/gang_planner.h"

#include <algorithm>
#include <tuple>

#include "berth/common/bits.h"

namespace berth::plugins {

using cluster::Level;

bool GangPlanner::Applies(const job::JobSpec& job) {
  bool blocks = false, gang = false;
  for (const auto& g : job.groups) {
    if (g.gpus < 1 || g.milli_per_gpu != kMilliPerGpu) return false;
    blocks = blocks || g.block_tasks > 0;
    gang = gang || g.gang_min() > 1;
  }
  // A bag of independent tasks (every minimum 1) gains nothing from locality:
  // it is placed task by task, filling holes.
  bool levels = job.required_level.has_value() || job.preferred_level.has_value();
  for (const auto& g : job.groups) levels = levels || g.required_level || g.preferred_level;
  return gang || blocks || levels;
}

const GangPlanner::Taken* GangPlanner::FindTaken(NodeId n) const {
  const int32_t i = taken_of_node_[n.value()];
  return i < 0 ? nullptr : &taken_[i];
}

GangPlanner::Taken& GangPlanner::TakenOn(NodeId n) {
  int32_t& i = taken_of_node_[n.value()];
  if (i < 0) {
    i = static_cast<int32_t>(taken_.size());
    taken_.push_back(Taken{n});
  }
  return taken_[i];
}

void GangPlanner::ResetTaken() {
  for (const Taken& t : taken_) taken_of_node_[t.node.value()] = -1;
  taken_.clear();
}

int32_t GangPlanner::NodeSlots(NodeId n, const Need& need) const {
  if (!s().up(n)) return 0;
  const auto& node = c().node(n);
  if (node.gpu_count < need.gpus || !need.types.Accepts(node.gpu_type)) return 0;
  const Taken* t = FindTaken(n);
  const uint64_t avail = s().full_free_mask(n) & ~(t ? t->mask : 0);
  int64_t slots = PopCount(avail) / need.gpus;
  if (need.cpu > 0) slots = std::min<int64_t>(slots, (s().free_cpu(n) - (t ? t->cpu : 0)) / need.cpu);
  if (need.mem > 0) slots = std::min<int64_t>(slots, (s().free_memory(n) - (t ? t->mem : 0)) / need.mem);
  return static_cast<int32_t>(std::max<int64_t>(0, slots));
}

int64_t GangPlanner::DomainSlots(DomainId d, const Need& need) const {
  const auto& dom = c().domain(d);
  if (dom.end.value() - dom.begin.value() == 1) return NodeSlots(dom.begin, need);
  int64_t slots = 0;
  const int32_t types = static_cast<int32_t>(c().gpu_types().size());
  for (int16_t t = 0; t < types; ++t) {
    if (!need.types.Accepts(GpuTypeId(t))) continue;
    for (int k = need.gpus; k <= s().max_full_free(GpuTypeId(t)); ++k)
      slots += int64_t{s().nodes_with_full_free(GpuTypeId(t), k).CountRange(dom.begin.value(), dom.end.value())} *
               (k / need.gpus);
  }
  return slots;
}

int32_t GangPlanner::PlaceOnNode(NodeId n, const Need& need, int32_t tasks, int32_t first_task) {
  const int32_t fit = std::min(tasks, NodeSlots(n, need));
  if (fit <= 0) return 0;
  Taken& t = TakenOn(n);
  for (int32_t i = 0; i < fit; ++i) {
    uint64_t avail = s().full_free_mask(n) & ~t.mask, mask = 0;
    for (int k = 0; k < need.gpus; ++k) {
      const uint64_t low = avail & (~avail + 1);
      mask |= low;
      avail &= avail - 1;
    }
    t.mask |= mask;
    t.cpu += need.cpu;
    t.mem += need.mem;
    allocs_.push_back(state::Allocation{n, mask, kMilliPerGpu, need.cpu, need.mem, need.gpu_mem});
    task_index_.push_back(first_task + i);
  }
  return fit;
}

int32_t GangPlanner::PlaceIn(DomainId d, const Need& need, int32_t tasks, int32_t first_task) {
  if (tasks <= 0) return 0;
  const auto& dom = c().domain(d);
  // Items to choose among: child domains, or the nodes of an NVLink domain.
  const bool nodes = dom.level == Level::kNvlink;
  if (nodes && dom.end.value() - dom.begin.value() == 1) return PlaceOnNode(dom.begin, need, tasks, first_task);
  std::vector<Item>& items = scratch_[static_cast<size_t>(dom.level)];
  items.clear();
  if (nodes) {
    for (int32_t n = dom.begin.value(); n < dom.end.value(); ++n)
      if (int32_t s = NodeSlots(NodeId(n), need); s > 0) items.push_back({s, n});
  } else {
    for (DomainId child : c().children(d))
      if (int64_t s = DomainSlots(child, need); s > 0) items.push_back({s, child.value()});
  }
  auto place = [&](const Item& it, int32_t want) {
    return nodes ? PlaceOnNode(NodeId(it.id), need, want, first_task)
                 : PlaceIn(DomainId(it.id), need, want, first_task);
  };
  int32_t placed = 0;
  // The tightest item that holds every remaining task.
  const Item* tight = nullptr;
  for (const Item& it : items)
    if (it.slots >= tasks && (!tight || it.slots < tight->slots)) tight = &it;
  if (tight) {
    const int32_t got = place(*tight, tasks);
    placed += got;
    first_task += got;
    if (placed == tasks) return placed;
    const int32_t skip = tight->id;
    std::erase_if(items, [&](const Item& it) { return it.id == skip; });
  }
  // Else the items with the most room first (fewest items), placed in node order.
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.slots != b.slots ? a.slots > b.slots : a.id < b.id;
  });
  size_t chosen = 0;
  for (int64_t cover = 0; chosen < items.size() && cover < tasks - placed; ++chosen) cover += items[chosen].slots;
  std::sort(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(chosen),
            [](const Item& a, const Item& b) { return a.id < b.id; });
  for (size_t i = 0; i < items.size() && placed < tasks; ++i) {
    const int32_t got = place(items[i], tasks - placed);
    placed += got;
    first_task += got;
  }
  return placed;
}

GangPlanner::Mark GangPlanner::Save() const { return Mark{allocs_.size(), taken_}; }

void GangPlanner::Restore(const Mark& m) {
  allocs_.resize(m.allocs);
  task_index_.resize(m.allocs);
  // Nodes first touched after the mark lose their entry (else their index
  // would point past, or later into another node's, entry).
  for (size_t i = m.taken.size(); i < taken_.size(); ++i) taken_of_node_[taken_[i].node.value()] = -1;
  taken_ = m.taken;
}

std::vector<std::pair<int64_t, int32_t>> GangPlanner::DomainsInside(DomainId d, Level level, const Need& need,
                                                                    int64_t min_slots) const {
  const auto& dom = c().domain(d);
  const auto& at = c().domains_at(level);
  auto lo = std::lower_bound(at.begin(), at.end(), dom.begin,
                             [&](DomainId x, NodeId b) { return c().domain(x).begin < b; });
  std::vector<std::pair<int64_t, int32_t>> out;
  for (auto it = lo; it != at.end() && c().domain(*it).begin < dom.end; ++it) {
    const int64_t slots = DomainSlots(*it, need);
    if (slots >= min_slots && slots > 0) out.push_back({slots, it->value()});
  }
  return out;
}

bool GangPlanner::PlaceBlock(DomainId d, Level level, const Need& need, int32_t tasks, int32_t first_task) {
  if (c().domain(d).level >= level) {
    const Mark saved = Save();
    if (PlaceIn(d, need, tasks, first_task) == tasks) return true;
    Restore(saved);
    return false;
  }
  // The domains of `level` inside d, tightest first.
  auto cands = DomainsInside(d, level, need, tasks);
  std::sort(cands.begin(), cands.end());
  for (const auto& [slots, id] : cands) {
    const Mark saved = Save();
    if (PlaceIn(DomainId(id), need, tasks, first_task) == tasks) return true;
    Restore(saved);
  }
  return false;
}

int32_t GangPlanner::PlaceGroupIn(DomainId d, const job::TaskGroup& g, const Need& need, int32_t tasks,
                                  int32_t first_task) {
  if (g.block_tasks <= 0) return PlaceIn(d, need, tasks, first_task);
  int32_t placed = 0;
  for (int32_t b = 0; b < tasks / g.block_tasks; ++b) {
    if (!PlaceBlock(d, g.block_level, need, g.block_tasks, first_task + placed)) break;
    placed += g.block_tasks;
  }
  return placed;
}

int32_t GangPlanner::PlaceGroup(DomainId d, const job::TaskGroup& g, std::optional<Level> required,
                                std::optional<Level> preferred, const Need& need, int32_t min_tasks,
                                int32_t first_task) {
  const Level at = c().domain(d).level;
  if (required && *required > at) {
    // One domain of the group's required level inside d, tightest first.
    auto cands = DomainsInside(d, *required, need, min_tasks);
    std::sort(cands.begin(), cands.end());
    for (const auto& [slots, id] : cands) {
      const Mark saved = Save();
      const int32_t got = PlaceGroup(DomainId(id), g, std::nullopt, preferred, need, min_tasks, first_task);
      if (got >= min_tasks) return got;
      Restore(saved);
    }
    return 0;
  }
  if (preferred && *preferred > at) {
    auto cands = DomainsInside(d, *preferred, need, 1);
    // The tightest domain of the preferred level that holds every task ...
    std::sort(cands.begin(), cands.end());
    for (const auto& [slots, id] : cands) {
      if (slots < g.count) continue;
      const Mark saved = Save();
      if (PlaceGroupIn(DomainId(id), g, need, g.count, first_task) == g.count) return g.count;
      Restore(saved);
    }
    // ... else the fewest of them (most room first), then in node order, so
    // that the least traffic crosses between them.
    std::sort(cands.begin(), cands.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    size_t chosen = 0;
    for (int64_t cover = 0; chosen < cands.size() && cover < g.count; ++chosen) cover += cands[chosen].first;
    std::sort(cands.begin(), cands.begin() + static_cast<std::ptrdiff_t>(chosen),
              [](const auto& a, const auto& b) { return a.second < b.second; });
    const Mark saved = Save();
    int32_t placed = 0;
    for (size_t i = 0; i < cands.size() && placed < g.count; ++i)
      placed += PlaceGroupIn(DomainId(cands[i].second), g, need, g.count - placed, first_task + placed);
    if (placed >= min_tasks) return placed;
    Restore(saved);
  }
  return PlaceGroupIn(d, g, need, g.count, first_task);
}

int32_t GangPlanner::Fragments(DomainId d, Level level, int64_t need) const {
  if (c().domain(d).level >= level) return 1;
  const auto& dom = c().domain(d);
  const auto& at = c().domains_at(level);
  auto lo = std::lower_bound(at.begin(), at.end(), dom.begin,
                             [&](DomainId x, NodeId b) { return c().domain(x).begin < b; });
  std::vector<int64_t> free;
  for (auto it = lo; it != at.end() && c().domain(*it).begin < dom.end; ++it)
    free.push_back(s().domain_full_free_gpus(*it));
  std::sort(free.begin(), free.end(), std::greater<>());
  int64_t cover = 0;
  for (size_t i = 0; i < free.size(); ++i)
    if ((cover += free[i]) >= need) return static_cast<int32_t>(i + 1);
  return INT32_MAX;
}

bool GangPlanner::TryDomain(const job::JobSpec& job, DomainId d, bool whole_count) {
  ResetTaken();
  allocs_.clear();
  task_index_.clear();
  int32_t task = 0;
  for (size_t gi = 0; gi < job.groups.size(); ++gi) {
    const auto& g = job.groups[gi];
    const Need need{g.gpus, g.cpu_milli, g.memory_mib, g.gpu_types, g.gpu_memory_mib};
    if (g.gpu_types_unknown) return false;
    const int32_t min_tasks = whole_count ? g.count : g.gang_min();
    // The group's own levels; its preference replaces the job's.
    const int32_t placed = PlaceGroup(d, g, g.required_level, g.preferred_level ? g.preferred_level : job.preferred_level,
                                      need, min_tasks, task);
    if (placed < min_tasks) {
      failed_group_ = static_cast<int32_t>(gi);
      return false;
    }
    task += g.count;
  }
  return true;
}

GangPlanResult GangPlanner::Plan(const state::ClusterState& state, const job::JobSpec& job) {
  GangPlanResult r;
  if (cp_ != &state.cluster() || taken_of_node_.size() != static_cast<size_t>(state.cluster().num_nodes())) {
    taken_.clear();
    taken_of_node_.assign(state.cluster().num_nodes(), -1);
  }
  sp_ = &state;
  cp_ = &state.cluster();
  scratch_.resize(cluster::kNumLevels);  // never resized during a descent: frames hold references
  // First every task of every group; for elastic groups, then at least their minimum.
  bool elastic = false;
  for (const auto& g : job.groups) elastic = elastic || g.gang_min() < g.count;
  int64_t best_free = 0, need = 0;
  failed_group_ = -1;
  for (int pass = 0; pass < (elastic ? 2 : 1); ++pass) {
    const bool whole_count = pass == 0;
    if (PlanPass(job, whole_count, r, best_free, need)) return r;
  }
  const int cap = static_cast<int>(job.required_level.value_or(Level::kRegion));
  r.reason = "no " + std::string(cluster::LevelName(static_cast<Level>(cap))) + " domain can hold the gang's " +
             std::to_string(need) + " GPUs now (most free in one domain: " + std::to_string(best_free) + ")";
  if (failed_group_ >= 0 && job.groups[failed_group_].required_level)
    r.reason += " with group '" + job.groups[failed_group_].name + "' within one " +
                cluster::LevelName(*job.groups[failed_group_].required_level);
  return r;
}

bool GangPlanner::PlanPass(const job::JobSpec& job, bool whole_count, GangPlanResult& r, int64_t& best_free,
                           int64_t& need) {
  need = 0;
  for (const auto& g : job.groups) need += int64_t{whole_count ? g.count : g.gang_min()} * g.gpus;
  const int cap = static_cast<int>(job.required_level.value_or(Level::kRegion));
  for (int l = cluster::kNumLevels - 1; l >= cap; --l) {
    const Level level = static_cast<Level>(l);
    if (need > c().max_domain_gpus(level)) continue;
    // (free GPUs, free GPUs of the parent, domain): tightest first, and among
    // equals the one inside the fullest parent, so that wider blocks stay whole.
    std::vector<std::tuple<int64_t, int64_t, int32_t>> cands;
    if (level == Level::kNvlink && c().single_node_nvlink()) {
      // One node per NVLink domain: the buckets give the tightest nodes directly.
      const int32_t types = static_cast<int32_t>(c().gpu_types().size());
      for (int16_t t = 0; t < types; ++t) {
        for (int k = static_cast<int>(need); k <= s().max_full_free(GpuTypeId(t)); ++k) {
          const DenseBitset& b = s().nodes_with_full_free(GpuTypeId(t), k);
          for (int32_t n = b.FindNext(0), taken = 0; n >= 0 && taken < 4; n = b.FindNext(n + 1), ++taken)
            cands.push_back({k, s().domain_full_free_gpus(c().node(NodeId(n)).domain[l - 1]),
                             c().node(NodeId(n)).domain[l].value()});
        }
      }
    } else {
      for (DomainId d : c().domains_at(level)) {
        const int64_t free = s().domain_full_free_gpus(d);
        best_free = std::max(best_free, free);
        if (free >= need) {
          const DomainId parent = c().domain(d).parent;
          cands.push_back({free, parent.valid() ? s().domain_full_free_gpus(parent) : 0, d.value()});
        }
      }
    }
    std::sort(cands.begin(), cands.end());
    if (job.preferred_level && l < static_cast<int>(*job.preferred_level)) {
      // No domain of the preferred level held the gang: the domains whose
      // free GPUs it covers with the fewest domains of that level first.
      std::vector<std::pair<int32_t, size_t>> rank;
      for (size_t i = 0; i < cands.size(); ++i)
        rank.push_back({Fragments(DomainId(std::get<2>(cands[i])), *job.preferred_level, need), i});
      std::stable_sort(rank.begin(), rank.end());
      std::vector<std::tuple<int64_t, int64_t, int32_t>> sorted;
      for (const auto& [frags, i] : rank) sorted.push_back(cands[i]);
      cands = std::move(sorted);
    }
    if (risk_ != nullptr) {
      std::vector<std::pair<int64_t, size_t>> rank;
      for (size_t i = 0; i < cands.size(); ++i) rank.push_back({(*risk_)(DomainId(std::get<2>(cands[i]))), i});
      std::stable_sort(rank.begin(), rank.end());
      std::vector<std::tuple<int64_t, int64_t, int32_t>> sorted;
      for (const auto& [risk, i] : rank) sorted.push_back(cands[i]);
      cands = std::move(sorted);
    }
    int tries = 0;
    for (const auto& [free, parent_free, id] : cands) {
      // Quick check with the bucket counts before the descent.
      bool enough = true;
      for (const auto& g : job.groups)
        enough = enough && DomainSlots(DomainId(id), Need{g.gpus, g.cpu_milli, g.memory_mib, g.gpu_types}) >=
                               (whole_count ? g.count : g.gang_min());
      if (!enough) continue;
      if (++tries > 8) break;
      if (TryDomain(job, DomainId(id), whole_count)) {
        r.ok = true;
        r.allocs = std::move(allocs_);
        r.task_index = std::move(task_index_);
        r.level = level;
        r.domain = DomainId(id);
        return true;
      }
    }
  }
  return false;
}

}  // namespace berth::plugins
