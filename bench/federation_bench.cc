// One global dispatch decision over 100 member clusters (10 regions x 10),
// from digests with partly free capacity, release profiles and in-flight
// jobs: `global` (the estimate on every member, then the earliest finish),
// the baselines, and a 32-job batch as an assignment problem (GLPK).
//
//   build/release/bench/federation_bench --benchmark_format=json
#include <benchmark/benchmark.h>

#include "berth/cluster/loaders.h"
#include "berth/common/rng.h"
#include "berth/federation/dispatch.h"

namespace {

using namespace berth;
using namespace berth::federation;

struct World {
  Federation fed;
  SpeedTable speed;
  std::vector<Digest> views;
  std::vector<std::vector<InFlight>> in_flight;
  std::vector<std::vector<TimeUs>> link_busy;
  std::vector<std::vector<TypeDigest>> capacity;
  std::vector<job::JobSpec> jobs;

  EstimateContext Context() const {
    EstimateContext c;
    c.fed = &fed;
    c.speed = &speed;
    c.views = views;
    c.in_flight = in_flight;
    c.link_busy = &link_busy;
    c.capacity = &capacity;
    c.now = 1000 * kUsPerSecond;
    return c;
  }
};

World MakeWorld(int regions, int per_region) {
  World w;
  Rng rng(7);
  auto cluster = std::make_shared<const cluster::Cluster>(*cluster::ParseClusterSpec("64x8:H100+64x8:A100"));
  for (int r = 0; r < regions; ++r) w.fed.regions.push_back("r" + std::to_string(r));
  w.fed.links.assign(regions, std::vector<Link>(regions, Link{10, 100'000, 0.05}));
  for (int r = 0; r < regions; ++r) w.fed.links[r][r] = Link{100, 1000, 0};
  for (int r = 0; r < regions; ++r) {
    for (int k = 0; k < per_region; ++k) {
      Member m;
      m.name = "c" + std::to_string(r) + "-" + std::to_string(k);
      m.region = r;
      m.cluster = cluster;
      m.default_price = 1 + rng.UniformReal();
      m.weight = 1;
      w.fed.members.push_back(m);
      w.speed.push_back({2.0, 1.0});
      Digest d;
      d.member = static_cast<int32_t>(w.views.size());
      d.version = 1;
      for (const char* name : {"H100", "A100"}) {
        TypeDigest t;
        t.name = name;
        t.total = 512;
        t.free = static_cast<int64_t>(rng.Uniform(129));
        for (size_t b = 0; b < kBlockSizes.size(); ++b) t.fit[b] = t.free / kBlockSizes[b] / 2;
        d.types.push_back(t);
        d.free_gpus += t.free;
        d.total_gpus += t.total;
      }
      for (int i = 0; i < 16; ++i)
        d.releases.push_back({(1000 + 60 * (i + 1)) * kUsPerSecond, static_cast<int64_t>(8 + rng.Uniform(32))});
      d.queue_jobs = static_cast<int64_t>(rng.Uniform(50));
      d.queue_gpus = d.queue_jobs * 8;
      d.queue_work_gpu_s = static_cast<double>(d.queue_gpus) * 3600;
      w.views.push_back(d);
      std::vector<InFlight> fl;
      for (int i = 0; i < 4; ++i) fl.push_back({i, 8, 8, 1, 0, 1000 * kUsPerSecond, 2000 * kUsPerSecond});
      w.in_flight.push_back(fl);
      TypeDigest h{"H100", 512, 512, {512, 256, 128, 64}}, a{"A100", 512, 512, {512, 256, 128, 64}};
      w.capacity.push_back({h, a});
    }
  }
  w.link_busy.assign(regions, std::vector<TimeUs>(regions, 0));
  for (int d = 0; d < 40; ++d) {
    Dataset ds;
    ds.name = "d" + std::to_string(d);
    ds.size_mib = static_cast<MiB>(1024 * (1 + rng.Uniform(500)));
    ds.regions = {static_cast<int32_t>(rng.Uniform(regions))};
    w.fed.dataset_index[ds.name] = d;
    w.fed.datasets.push_back(ds);
  }
  for (int i = 0; i < 256; ++i) {
    job::JobSpec j;
    j.id = JobId(i);
    j.name = "j";
    j.duration = static_cast<TimeUs>(600 + rng.Uniform(36000)) * kUsPerSecond;
    j.dataset = "d" + std::to_string(rng.Uniform(40));
    job::TaskGroup g;
    g.count = 1 + static_cast<int32_t>(rng.Uniform(4));
    g.gpus = 8;
    j.groups.push_back(g);
    w.jobs.push_back(j);
  }
  return w;
}

void BM_Dispatch(benchmark::State& state, Policy policy) {
  World w = MakeWorld(10, 10);
  Dispatcher d(policy, w.fed);
  const EstimateContext ctx = w.Context();
  size_t i = 0;
  for (auto _ : state) {
    const job::JobSpec& j = w.jobs[i++ % w.jobs.size()];
    Request r{&j, w.fed.dataset_index.at(j.dataset), static_cast<int64_t>(i), {}};
    benchmark::DoNotOptimize(d.ChooseOne(ctx, r));
  }
  state.counters["clusters"] = static_cast<double>(w.fed.members.size());
}
BENCHMARK_CAPTURE(BM_Dispatch, global, Policy::kGlobal)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Dispatch, least_loaded, Policy::kLeastLoaded)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Dispatch, data_local, Policy::kDataLocal)->Unit(benchmark::kMicrosecond);

void BM_AssignBatch32(benchmark::State& state) {
  World w = MakeWorld(10, 10);
  Dispatcher d(Policy::kGlobal, w.fed);
  const EstimateContext ctx = w.Context();
  std::vector<Request> batch;
  for (int i = 0; i < 32; ++i)
    batch.push_back({&w.jobs[i], w.fed.dataset_index.at(w.jobs[i].dataset), i, {}});
  for (auto _ : state) benchmark::DoNotOptimize(d.AssignBatch(ctx, batch));
  state.counters["clusters"] = static_cast<double>(w.fed.members.size());
}
BENCHMARK(BM_AssignBatch32)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
