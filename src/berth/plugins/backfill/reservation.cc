// Earliest start of a whole-GPU demand on a per-node timeline of releases.
#include "berth/plugins/backfill/reservation.h"

#include <algorithm>
#include <numeric>

namespace berth::plugins::backfill {

GpuDemand GpuDemand::Of(const job::JobSpec& job) {
  GpuDemand d;
  for (const auto& g : job.groups) {
    if (g.gpus <= 0 || g.is_sharing() || g.gang_min() <= 0) continue;
    d.groups.push_back({g.gpus, g.gang_min(), g.gpu_types});
  }
  return d;
}

int64_t GpuDemand::total_gpus() const {
  int64_t n = 0;
  for (const auto& g : groups) n += int64_t{g.gpus} * g.tasks;
  return n;
}

bool GpuDemand::Accepts(GpuTypeId t) const {
  if (!t.valid()) return false;
  for (const auto& g : groups)
    if (g.types.Accepts(t)) return true;
  return false;
}

// By time only: the planner applies every release up to a time before it
// looks, so the order of equal times does not change any result.
void Timeline::Prepare() {
  std::sort(releases.begin(), releases.end(), [](const Release& a, const Release& b) { return a.time < b.time; });
}

namespace {

bool GroupAccepts(const Timeline& tl, const GpuDemand::Group& g, int32_t node) {
  return tl.type[node].valid() && g.types.Accepts(tl.type[node]);
}

// Places the demand on `avail` (modified), largest tasks first; in each group
// the nodes with the fewest GPUs free now come first (then rank). Returns the
// GPUs taken per node, or an empty vector when some group falls short.
std::vector<NodeGpus> Assign(const Timeline& tl, const GpuDemand& demand, std::vector<int32_t>& avail) {
  std::vector<size_t> order(demand.groups.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return demand.groups[a].gpus > demand.groups[b].gpus; });
  std::vector<NodeGpus> taken;
  std::vector<int32_t> cand;
  for (size_t gi : order) {
    const GpuDemand::Group& g = demand.groups[gi];
    cand.clear();
    for (int32_t n = 0; n < tl.num_nodes(); ++n)
      if (avail[n] >= g.gpus && GroupAccepts(tl, g, n)) cand.push_back(n);
    std::sort(cand.begin(), cand.end(), [&](int32_t a, int32_t b) {
      if (tl.free_now[a] != tl.free_now[b]) return tl.free_now[a] < tl.free_now[b];
      if (tl.rank[a] != tl.rank[b]) return tl.rank[a] < tl.rank[b];
      return a < b;
    });
    int32_t remaining = g.tasks;
    for (int32_t n : cand) {
      const int32_t take = std::min(avail[n] / g.gpus, remaining);
      avail[n] -= take * g.gpus;
      taken.push_back({n, take * g.gpus});
      remaining -= take;
      if (remaining == 0) break;
    }
    if (remaining > 0) return {};
  }
  // One entry per node, by node.
  std::sort(taken.begin(), taken.end(), [](const NodeGpus& a, const NodeGpus& b) { return a.node < b.node; });
  size_t w = 0;
  for (size_t r = 0; r < taken.size(); ++r) {
    if (w > 0 && taken[w - 1].node == taken[r].node) {
      taken[w - 1].gpus += taken[r].gpus;
    } else {
      taken[w++] = taken[r];
    }
  }
  taken.resize(w);
  return taken;
}

}  // namespace

std::optional<ReservationPlan> EarliestStart(const Timeline& tl, const GpuDemand& demand, TimeUs now, TimeUs runtime,
                                             std::span<const Hold> holds) {
  if (demand.empty()) return std::nullopt;
  const int32_t num_nodes = tl.num_nodes();
  const size_t num_groups = demand.groups.size();
  std::vector<int32_t> free(tl.free_now.begin(), tl.free_now.end());  // at t, holds aside
  // Per group: sum over accepted nodes of floor(free / gpus), kept up to date.
  std::vector<int64_t> fits(num_groups, 0);
  for (int32_t n = 0; n < num_nodes; ++n)
    for (size_t g = 0; g < num_groups; ++g)
      if (GroupAccepts(tl, demand.groups[g], n)) fits[g] += free[n] / demand.groups[g].gpus;

  // Candidate starts: now, and every later time at which GPUs come free.
  std::vector<TimeUs> times{now};
  for (const Release& r : tl.releases)  // sorted by Prepare
    if (r.time > times.back()) times.push_back(r.time);
  if (!holds.empty()) {
    for (const Hold& h : holds)
      if (h.end > now) times.push_back(h.end);
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
  }

  std::vector<NodeGpus> held;
  std::vector<int64_t> adjusted(num_groups);
  std::vector<int32_t> avail;
  size_t next = 0;
  for (TimeUs t : times) {
    for (; next < tl.releases.size() && tl.releases[next].time <= t; ++next) {
      const Release& r = tl.releases[next];
      const int32_t before = free[r.node];
      free[r.node] += r.gpus;
      for (size_t g = 0; g < num_groups; ++g)
        if (GroupAccepts(tl, demand.groups[g], r.node))
          fits[g] += free[r.node] / demand.groups[g].gpus - before / demand.groups[g].gpus;
    }
    // The holds that overlap [t, t + runtime), merged per node.
    held.clear();
    for (const Hold& h : holds)
      if (h.start < t + runtime && h.end > t) held.insert(held.end(), h.nodes.begin(), h.nodes.end());
    std::sort(held.begin(), held.end(), [](const NodeGpus& a, const NodeGpus& b) { return a.node < b.node; });
    adjusted = fits;
    for (size_t i = 0; i < held.size();) {
      const int32_t node = held[i].node;
      int32_t take = 0;
      for (; i < held.size() && held[i].node == node; ++i) take += held[i].gpus;
      const int32_t after = std::max(0, free[node] - take);
      for (size_t g = 0; g < num_groups; ++g)
        if (GroupAccepts(tl, demand.groups[g], node))
          adjusted[g] -= free[node] / demand.groups[g].gpus - after / demand.groups[g].gpus;
    }
    bool enough = true;
    for (size_t g = 0; g < num_groups && enough; ++g) enough = adjusted[g] >= demand.groups[g].tasks;
    if (!enough) continue;
    avail = free;
    for (const NodeGpus& h : held) avail[h.node] = std::max(0, avail[h.node] - h.gpus);
    ReservationPlan plan;
    for (int32_t n = 0; n < num_nodes; ++n)
      if (demand.Accepts(tl.type[n])) plan.free_at_start += avail[n];
    plan.nodes = Assign(tl, demand, avail);
    if (plan.nodes.empty()) continue;  // the greedy packing of several groups failed here
    plan.start = t;
    plan.extra = plan.free_at_start - demand.total_gpus();
    return plan;
  }
  return std::nullopt;
}

}  // namespace berth::plugins::backfill
