// Placement at 100,000 GPUs: single-GPU decisions per second and their
// latency, with the binpack index fast path and with a full scan (the same
// filter and score, no candidates), in one binary so the ratio comes from one
// run; and the memory of the hot state.
//
// Cluster "12500x8:H100/leaf=32/spine=16", filled to 70% by a seeded stream of
// 1/2/4/8-GPU tasks with churn (bench_fill.h). Each iteration is one decision
// in a steady stream: a 1-GPU job is submitted and scheduled (timed: the
// decision latency), then a random running 1-GPU job finishes, so the fill
// stays constant. items_per_second counts whole iterations (place + release).
//
//   build/release/bench/placement_bench [--benchmark_format=json]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <malloc.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "bench_fill.h"
#include "berth/cluster/loaders.h"
#include "berth/plugins/builtin.h"

namespace berth::bench {
namespace {

constexpr const char* kClusterSpec = "12500x8:H100/leaf=32/spine=16";

struct World {
  cluster::Cluster cluster;
  framework::PluginRegistry plugins;
  framework::PolicyRegistry policies;
  std::map<std::string, std::unique_ptr<Bed>> beds;  // by variant
  std::map<std::string, std::pair<double, double>> rates;  // decisions/s (CPU, wall), last run
  std::string error;
};

// The process's one world, built on first use (the fill is too slow to redo
// for every run of a benchmark).
World& TheWorld() {
  static World* world = [] {
    auto* w = new World();
    auto c = cluster::ParseClusterSpec(kClusterSpec);
    if (!c.ok()) {
      w->error = c.status().ToString();
      return w;
    }
    w->cluster = std::move(c).value();
    if (Status s = plugins::RegisterBuiltinPlugins(w->plugins); !s.ok()) w->error = s.ToString();
    if (Status s = plugins::RegisterBuiltinPolicies(w->policies); !s.ok()) w->error = s.ToString();
    return w;
  }();
  return *world;
}

// "binpack": the policy with its candidates; "fullscan": the same profile
// without candidates (every node filtered and scored).
StatusOr<Bed*> GetBed(const std::string& variant) {
  World& w = TheWorld();
  if (!w.error.empty()) return Internal(w.error);
  auto it = w.beds.find(variant);
  if (it != w.beds.end()) return it->second.get();
  BERTH_ASSIGN_OR_RETURN(framework::Profile p, w.policies.Find("binpack"));
  if (variant == "fullscan") p.candidates.clear();
  BERTH_ASSIGN_OR_RETURN(std::unique_ptr<Bed> bed, MakeBed(w.cluster, p, w.plugins, FillOptions{}));
  Bed* raw = bed.get();
  w.beds.emplace(variant, std::move(bed));
  return raw;
}

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double Percentile(std::vector<int64_t>& v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return static_cast<double>(v[k]) / 1000.0;
}

void BM_SingleGpuDecision(benchmark::State& st, const std::string& variant) {
  StatusOr<Bed*> got = GetBed(variant);
  if (!got.ok()) {
    st.SkipWithError(got.status().ToString().c_str());
    return;
  }
  Bed& bed = **got;
  auto& sched = *bed.sched;
  std::vector<int64_t> place_ns, release_ns;
  place_ns.reserve(st.max_iterations);
  release_ns.reserve(st.max_iterations);
  const job::JobSpec proto = GpuJob(0, 1);
  int64_t failed = 0;
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = CpuSeconds();
  for (auto _ : st) {
    job::JobSpec j = proto;
    const JobId id(bed.next_id++);
    j.id = id;
    const auto t0 = std::chrono::steady_clock::now();
    (void)sched.Submit(std::move(j));
    sched.Schedule();
    const auto t1 = std::chrono::steady_clock::now();
    if (sched.Find(id)->state != job::JobState::kRunning) {
      ++failed;
      continue;
    }
    // A random running 1-GPU job (perhaps this one) finishes.
    bed.singles.push_back(id);
    const size_t pick = bed.rng.Uniform(bed.singles.size());
    (void)sched.Finish(bed.singles[pick], job::JobState::kSucceeded);
    const auto t2 = std::chrono::steady_clock::now();
    bed.singles[pick] = bed.singles.back();
    bed.singles.pop_back();
    place_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
    release_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t2 - t1).count());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu_seconds = CpuSeconds() - cpu_start;
  if (failed) st.SkipWithError("a 1-GPU job did not fit");
  st.SetItemsProcessed(st.iterations());
  st.counters["p50_us"] = Percentile(place_ns, 0.50);
  st.counters["p90_us"] = Percentile(place_ns, 0.90);
  st.counters["p99_us"] = Percentile(place_ns, 0.99);
  st.counters["p999_us"] = Percentile(place_ns, 0.999);
  st.counters["max_us"] = Percentile(place_ns, 1.0);
  st.counters["release_p50_us"] = Percentile(release_ns, 0.50);
  st.counters["fill"] = static_cast<double>(sched.state().allocated_milli()) /
                        static_cast<double>(TheWorld().cluster.total_milli_gpu());
  st.counters["fill_setup_s"] = bed.fill_seconds;
  st.SetLabel("fill " + bed.fill_hash.substr(0, 8));
  const double n = static_cast<double>(st.iterations());
  st.counters["wall_per_s"] = n / std::max(seconds, 1e-9);
  TheWorld().rates[variant] = {n / std::max(cpu_seconds, 1e-9), n / std::max(seconds, 1e-9)};
}

// The hot state's memory at the bed's fill (nothing is timed).
void BM_StateMemory(benchmark::State& st) {
  StatusOr<Bed*> got = GetBed("binpack");
  if (!got.ok()) {
    st.SkipWithError(got.status().ToString().c_str());
    return;
  }
  const state::ClusterState& s = (*got)->sched->state();
  for (auto _ : st) benchmark::DoNotOptimize(s.MemoryBytes());
  const state::StateMemory m = s.Memory();
  const state::ClusterState empty(TheWorld().cluster);
  constexpr double kMiB = 1024.0 * 1024.0;
  st.counters["total_MiB"] = static_cast<double>(m.total()) / kMiB;
  st.counters["per_gpu_MiB"] = static_cast<double>(m.per_gpu) / kMiB;
  st.counters["per_node_MiB"] = static_cast<double>(m.per_node) / kMiB;
  st.counters["indexes_MiB"] = static_cast<double>(m.indexes) / kMiB;
  st.counters["task_records_MiB"] = static_cast<double>(m.task_records) / kMiB;
  st.counters["task_lists_MiB"] = static_cast<double>(m.task_lists) / kMiB;
  st.counters["tasks"] = static_cast<double>(s.num_tasks());
  st.counters["empty_MiB"] = static_cast<double>(empty.MemoryBytes()) / kMiB;
  st.counters["gpus"] = static_cast<double>(TheWorld().cluster.total_gpus());
  int64_t with_free = 0;
  for (int32_t i = 0; i < TheWorld().cluster.num_nodes(); ++i) with_free += s.full_free_gpus(NodeId(i)) > 0;
  st.counters["nodes_with_free_gpu"] = static_cast<double>(with_free);
  // Cross-check of the estimate: what malloc hands out for a copy (vectors of
  // a copy are exactly as long as their contents).
  const size_t before = mallinfo2().uordblks;
  auto copy = std::make_unique<state::ClusterState>(s);
  st.counters["copy_MiB"] = static_cast<double>(mallinfo2().uordblks - before) / kMiB;
  benchmark::DoNotOptimize(copy);
}

// Fixed iteration counts: the scheduler keeps a record of every job, so an
// open-ended run would grow without bound; these give ~1 s per variant.
// Rates are per CPU second of this thread (the machine may be shared); the
// wall-clock rate is the counter wall_per_s.
BENCHMARK_CAPTURE(BM_SingleGpuDecision, binpack, std::string("binpack"))
    ->Iterations(200'000)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SingleGpuDecision, fullscan, std::string("fullscan"))
    ->Iterations(4'000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StateMemory)->Iterations(1);

}  // namespace
}  // namespace berth::bench

// The usual main, then the speed-up on stderr (stdout may be JSON).
int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  const auto& rates = berth::bench::TheWorld().rates;
  auto fast = rates.find("binpack"), slow = rates.find("fullscan");
  if (fast != rates.end() && slow != rates.end()) {
    const auto [fast_cpu, fast_wall] = fast->second;
    const auto [slow_cpu, slow_wall] = slow->second;
    std::fprintf(stderr, "binpack candidates vs full scan, decisions per CPU second: %.0f vs %.0f = %.1fx\n",
                 fast_cpu, slow_cpu, fast_cpu / slow_cpu);
    std::fprintf(stderr, "binpack candidates vs full scan, decisions per wall second: %.0f vs %.0f = %.1fx\n",
                 fast_wall, slow_wall, fast_wall / slow_wall);
  }
  return 0;
}
