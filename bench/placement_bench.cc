// Placement at 100,000 GPUs: single-GPU decisions per second and their
// latency for the product policies, by name from the policy registry as
// users run them (`berth simulate --policy NAME`), each beside the same
// policy with every node filtered and scored (SchedulerOptions::full_scan,
// the exactness oracle), in one binary so the ratios come from one run; and
// the memory of the hot state.
//
// Cluster "12500x8:H100/leaf=32/spine=16", filled to 70% by a seeded stream of
// 1/2/4/8-GPU tasks with churn (bench_fill.h), once by `binpack`; every
// policy's scheduler adopts those placements. Each iteration is one decision
// in a steady stream: a 1-GPU job is submitted and scheduled (timed: the
// decision latency), then a random running 1-GPU job finishes, so the fill
// stays constant. items_per_second counts whole iterations (place + release)
// per CPU second; cpu_us_per_decision and the ratios (stderr) per policy.
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

// The policies measured, as registered.
const char* const kPolicies[] = {"binpack", "bestfit", "fifo", "topology", "fairshare", "backfill", "fgd", "berth-frag"};

struct World {
  cluster::Cluster cluster;
  framework::PluginRegistry plugins;
  framework::PolicyRegistry policies;
  std::unique_ptr<SharedFill> fill;
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

// "POLICY" or "POLICY/scan": the registry's policy on the shared fill.
StatusOr<Bed*> GetBed(const std::string& variant) {
  World& w = TheWorld();
  if (!w.error.empty()) return Internal(w.error);
  auto it = w.beds.find(variant);
  if (it != w.beds.end()) return it->second.get();
  if (!w.fill) {
    BERTH_ASSIGN_OR_RETURN(SharedFill f, MakeSharedFill(w.cluster, w.policies, w.plugins, FillOptions{}));
    w.fill = std::make_unique<SharedFill>(std::move(f));
  }
  const size_t slash = variant.find('/');
  const std::string policy = variant.substr(0, slash);
  const bool scan = slash != std::string::npos;
  BERTH_ASSIGN_OR_RETURN(std::unique_ptr<Bed> bed, AdoptFill(*w.fill, policy, w.policies, w.plugins, scan));
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
    bed.clock.Advance(1);
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
  st.SetLabel("fill " + bed.fill_hash.substr(0, 8) + " log " + sched.log().HashHex().substr(0, 8));
  const double n = static_cast<double>(st.iterations());
  st.counters["wall_per_s"] = n / std::max(seconds, 1e-9);
  st.counters["cpu_us_per_decision"] = 1e6 * cpu_seconds / std::max(n, 1.0);
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

BENCHMARK(BM_StateMemory)->Iterations(1);

}  // namespace
}  // namespace berth::bench

// Fixed iteration counts: the scheduler keeps a record of every job, so an
// open-ended run would grow without bound. Rates are per CPU second of the
// process (the machine may be shared); the wall-clock rate is wall_per_s.
// Then the ratio of each policy to its scan, and to binpack, on stderr
// (stdout may be JSON).
int main(int argc, char** argv) {
  using berth::bench::BM_SingleGpuDecision;
  for (const char* policy : berth::bench::kPolicies) {
    for (bool scan : {false, true}) {
      const std::string variant = std::string(policy) + (scan ? "/scan" : "");
      benchmark::RegisterBenchmark(("SingleGpuDecision/" + variant).c_str(), BM_SingleGpuDecision, variant)
          ->Iterations(scan ? 2'000 : 50'000)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  const auto& rates = berth::bench::TheWorld().rates;
  auto binpack = rates.find("binpack");
  for (const char* policy : berth::bench::kPolicies) {
    auto fast = rates.find(policy), slow = rates.find(std::string(policy) + "/scan");
    if (fast == rates.end()) continue;
    std::fprintf(stderr, "%-11s %9.0f decisions per CPU s", policy, fast->second.first);
    if (slow != rates.end())
      std::fprintf(stderr, "; scan %7.0f (%.1fx)", slow->second.first, fast->second.first / slow->second.first);
    if (binpack != rates.end())
      std::fprintf(stderr, "; %.2fx binpack", fast->second.first / binpack->second.first);
    std::fprintf(stderr, "\n");
  }
  return 0;
}
