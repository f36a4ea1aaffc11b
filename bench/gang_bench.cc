// Topology-aware gang placement at 100,000 GPUs: 12,500 nodes x 8 H100 in
// leaves of 32 nodes and spines of 16 leaves, ~70% full with a seeded mix of
// 1/2/4/8-GPU tasks. Measures planning one gang of 512 and 8,192 GPUs (64 and
// 1,024 whole nodes) with the topology planner, and with a naive planner that
// scans every node in order for the same gang, in the same binary.
// Per-iteration latencies are reported as p50/p99 counters (microseconds).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "berth/cluster/loaders.h"
#include "berth/common/rng.h"
#include "berth/plugins/topology/gang_planner.h"
#include "berth/state/cluster_state.h"

namespace berth {
namespace {

struct Fixture {
  std::unique_ptr<cluster::Cluster> cluster;
  std::unique_ptr<state::ClusterState> state;
};

// Fills the cluster to 70% of its GPUs with a seeded mix of 1/2/4/8-GPU tasks,
// each placed on a random node among the tightest that fit (best fit by free
// GPU count, as a packing scheduler leaves it), with 5% of tasks scattered on
// any node that fits: free capacity is partly whole nodes, partly holes.
const Fixture& Cluster70() {
  static Fixture* f = [] {
    auto* fx = new Fixture;
    fx->cluster = std::make_unique<cluster::Cluster>(*cluster::ParseClusterSpec("12500x8:H100/leaf=32/spine=16"));
    fx->state = std::make_unique<state::ClusterState>(*fx->cluster);
    Rng rng(7);
    const int64_t target = fx->cluster->total_gpus() * 70 / 100;
    int64_t used = 0, task = 0;
    static const int kSizes[] = {1, 1, 1, 2, 2, 4, 8, 8};
    while (used < target) {
      const int g = kSizes[rng.Uniform(8)];
      NodeId n(static_cast<int32_t>(rng.Uniform(fx->cluster->num_nodes())));
      if (rng.Uniform(100) >= 5) {
        // Best fit: the tightest bucket with room, a random node in it.
        for (int k = g; k <= 8; ++k) {
          const DenseBitset& b = fx->state->nodes_with_full_free(GpuTypeId(0), k);
          const int32_t start = static_cast<int32_t>(rng.Uniform(fx->cluster->num_nodes()));
          int32_t pick = b.FindNext(start);
          if (pick < 0) pick = b.FindNext(0);
          if (pick >= 0) {
            n = NodeId(pick);
            break;
          }
        }
      }
      uint64_t free = fx->state->full_free_mask(n), mask = 0;
      if (__builtin_popcountll(free) < g) continue;
      for (int k = 0; k < g; ++k) {
        const uint64_t low = free & (~free + 1);
        mask |= low;
        free &= free - 1;
      }
      (void)fx->state->Apply(state::PlaceTask{TaskKey{JobId(task++), 0}, state::Allocation{n, mask, 1000, 0, 0}});
      used += g;
    }
    return fx;
  }();
  return *f;
}

job::JobSpec Gang(int nodes) {
  job::JobSpec j;
  j.id = JobId(1'000'000'000);
  j.name = "gang";
  j.groups.push_back(job::TaskGroup{.count = nodes, .gpus = 8});
  return j;
}

void Report(benchmark::State& st, std::vector<double>& us) {
  std::sort(us.begin(), us.end());
  if (us.empty()) return;
  st.counters["p50_us"] = us[us.size() / 2];
  st.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
}

void BM_GangTopology(benchmark::State& st) {
  const Fixture& f = Cluster70();
  const job::JobSpec gang = Gang(static_cast<int>(st.range(0)) / 8);
  std::vector<double> us;
  plugins::GangPlanner planner;
  for (auto _ : st) {
    auto t0 = std::chrono::steady_clock::now();
    plugins::GangPlanResult r = planner.Plan(*f.state, gang);
    benchmark::DoNotOptimize(r);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    if (!r.ok) st.SkipWithError("gang did not fit");
  }
  Report(st, us);
}

// The same decision without counters: scan every node to count whole free
// nodes per leaf and per spine, pick the tightest leaf, else spine, else the
// cluster that holds the gang, then take its free nodes in order.
void BM_GangNaiveScan(benchmark::State& st) {
  const Fixture& f = Cluster70();
  const int want = static_cast<int>(st.range(0)) / 8;
  const auto& c = *f.cluster;
  std::vector<double> us;
  std::vector<int32_t> per_domain(c.domains().size());
  for (auto _ : st) {
    auto t0 = std::chrono::steady_clock::now();
    std::fill(per_domain.begin(), per_domain.end(), 0);
    for (int32_t n = 0; n < c.num_nodes(); ++n) {
      const NodeId id(n);
      if (!f.state->up(id) || f.state->full_free_gpus(id) != 8) continue;
      for (const DomainId d : c.node(id).domain) ++per_domain[d.value()];
    }
    DomainId best;
    for (int l = cluster::kNumLevels - 2; l >= 0 && !best.valid(); --l) {
      for (DomainId d : c.domains_at(static_cast<cluster::Level>(l)))
        if (per_domain[d.value()] >= want && (!best.valid() || per_domain[d.value()] < per_domain[best.value()]))
          best = d;
    }
    std::vector<NodeId> chosen;
    if (best.valid()) {
      for (int32_t n = c.domain(best).begin.value(); n < c.domain(best).end.value() && static_cast<int>(chosen.size()) < want; ++n)
        if (f.state->up(NodeId(n)) && f.state->full_free_gpus(NodeId(n)) == 8) chosen.push_back(NodeId(n));
    }
    benchmark::DoNotOptimize(chosen);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    if (!best.valid()) st.SkipWithError("gang did not fit");
  }
  Report(st, us);
}

BENCHMARK(BM_GangTopology)->Arg(512)->Arg(8192)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GangNaiveScan)->Arg(512)->Arg(8192)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace berth

BENCHMARK_MAIN();
