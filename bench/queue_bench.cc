// One scheduling pass over a standing queue: what a pass costs per policy
// when N jobs wait and none can start, for N = 1,000, 100,000 and 1,000,000.
//
// The cluster is "12500x8:H100/leaf=32/spine=16" (100,000 GPUs), held from
// t=0 by 12,500 jobs of 8 GPUs that never end (adopted on one node each, so
// every policy sees the same state). N jobs of 1, 2, 4 or 8 GPUs (seeded:
// 50/20/15/15%) from 14 tenants are queued behind them and a first pass
// (untimed) gives each its verdict. Each iteration then advances the clock by
// a millisecond, submits one more such job and runs one pass (timed): the
// pass a scheduler runs at every arrival while the queue stands. (The
// holders stay inside the 600 s min-runtime guard, so no policy evicts them.)
//
//   QueuePass/<policy>/<N>        the policy as registered
//   QueuePass/<policy>/<N>/full   with SchedulerOptions::full_pass (a
//                                 preemption try for every blocked job, no
//                                 early stop: the exactness oracle)
//
// Counters: cpu_us per pass (CPU time of the process / iterations: the
// machine may be shared), visited (jobs the last pass reached), pending.
//
//   build/release/bench/queue_bench --benchmark_format=json
//   build/release/bench/queue_bench --benchmark_filter='fairshare/1000000$'
#include <benchmark/benchmark.h>

#include <time.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "berth/cluster/loaders.h"
#include "berth/plugins/builtin.h"
#include "berth/scheduler/scheduler.h"

namespace berth::bench {
namespace {

const char* const kPolicies[] = {"fifo",     "sjf",      "topology", "backfill",         "fairshare",
                                 "fairshare-backfill", "berth-frag", "priority-preempt", "srtf", "tiresias"};
const int64_t kQueues[] = {1'000, 100'000, 1'000'000};
const char* const kTenants[] = {"vc0", "vc1", "vc2", "vc3", "vc4", "vc5", "vc6",
                                "vc7", "vc8", "vc9", "vcA", "vcB", "vcC", "vcD"};

struct Registries {
  framework::PluginRegistry plugins;
  framework::PolicyRegistry policies;
  std::string error;
};

Registries& TheRegistries() {
  static Registries* r = [] {
    auto* r = new Registries();
    if (Status s = plugins::RegisterBuiltinPlugins(r->plugins); !s.ok()) r->error = s.ToString();
    if (Status s = plugins::RegisterBuiltinPolicies(r->policies); !s.ok()) r->error = s.ToString();
    return r;
  }();
  return *r;
}

const cluster::Cluster& TheCluster() {
  static const cluster::Cluster* c = [] {
    auto parsed = cluster::ParseClusterSpec("12500x8:H100/leaf=32/spine=16");
    return parsed.ok() ? new cluster::Cluster(std::move(parsed).value()) : new cluster::Cluster();
  }();
  return *c;
}

job::JobSpec Job(int64_t id, int32_t gpus, const char* tenant, TimeUs duration) {
  job::JobSpec j;
  j.id = JobId(id);
  j.name = "j" + std::to_string(id);
  j.tenant = tenant;
  j.duration = duration;
  job::TaskGroup g;
  g.name = "w";
  g.gpus = gpus;
  g.cpu_milli = int64_t{1000} * gpus;
  g.memory_mib = int64_t{1024} * gpus;
  j.groups.push_back(std::move(g));
  return j;
}

job::JobSpec Queued(Rng& rng, int64_t id) {
  static const int32_t kGpus[4] = {1, 2, 4, 8};
  const uint64_t x = rng.Uniform(100);
  const int32_t gpus = kGpus[x < 50 ? 0 : x < 70 ? 1 : x < 85 ? 2 : 3];
  return Job(id, gpus, kTenants[rng.Uniform(14)], SecondsToUs(static_cast<double>(60 + rng.Uniform(36'000))));
}

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void BM_QueuePass(benchmark::State& st, const std::string& policy, int64_t queued, bool full_pass) {
  Registries& r = TheRegistries();
  const cluster::Cluster& c = TheCluster();
  if (!r.error.empty() || c.num_nodes() == 0) {
    st.SkipWithError("registries or cluster");
    return;
  }
  auto profile = r.policies.Find(policy);
  if (!profile.ok()) {
    st.SkipWithError(profile.status().ToString().c_str());
    return;
  }
  // The holders, then the queue (berth-frag's typical pods come from the queue's mix).
  std::vector<job::JobSpec> holders;
  for (int32_t n = 0; n < c.num_nodes(); ++n) holders.push_back(Job(n, 8, "hold", SecondsToUs(1e9)));
  Rng rng(42);
  std::vector<job::JobSpec> workload;
  for (int i = 0; i < 10'000; ++i) workload.push_back(Queued(rng, i));
  const framework::PluginContext ctx{&c, workload};
  auto fw = framework::Framework::Create(*profile, r.plugins, ctx);
  if (!fw.ok()) {
    st.SkipWithError(fw.status().ToString().c_str());
    return;
  }
  ManualClock clock(0);
  scheduler::SchedulerOptions so;
  so.seed = 42;
  so.full_pass = full_pass;
  scheduler::Scheduler s(c, std::move(fw).value(), so, clock);
  for (int32_t n = 0; n < c.num_nodes(); ++n) {
    const job::JobSpec& h = holders[n];
    state::Allocation a;
    a.node = NodeId(n);
    a.gpu_mask = 0xff;
    a.milli_per_gpu = kMilliPerGpu;
    a.cpu_milli = h.groups[0].cpu_milli;
    a.memory_mib = h.groups[0].memory_mib;
    const framework::TaskPlacement p{TaskKey{h.id, 0}, a};
    if (!s.Submit(h).ok() || !s.Adopt(h.id, std::span(&p, 1), 0).ok()) {
      st.SkipWithError("adopting the holders");
      return;
    }
  }
  int64_t next_id = c.num_nodes();
  Rng qrng(7);
  clock.Advance(SecondsToUs(1));
  for (int64_t i = 0; i < queued; ++i) {
    if (!s.Submit(Queued(qrng, next_id++)).ok()) {
      st.SkipWithError("submitting the queue");
      return;
    }
  }
  s.Schedule();
  int64_t started = 0;
  const double cpu_start = CpuSeconds();
  for (auto _ : st) {
    clock.Advance(1000);
    (void)s.Submit(Queued(qrng, next_id++));
    started += static_cast<int64_t>(s.Schedule().size());
  }
  const double cpu_seconds = CpuSeconds() - cpu_start;
  if (started > 0) st.SkipWithError("a queued job started");
  st.counters["cpu_us"] = 1e6 * cpu_seconds / static_cast<double>(std::max<int64_t>(st.iterations(), 1));
  st.counters["visited"] = static_cast<double>(s.visited_in_last_pass().size());
  st.counters["pending"] = static_cast<double>(s.pending_count());
  st.SetLabel("log " + s.log().HashHex().substr(0, 8));
}

}  // namespace
}  // namespace berth::bench

int main(int argc, char** argv) {
  for (const char* policy : berth::bench::kPolicies) {
    for (int64_t queued : berth::bench::kQueues) {
      for (bool full : {false, true}) {
        const std::string name =
            std::string("QueuePass/") + policy + "/" + std::to_string(queued) + (full ? "/full" : "");
        benchmark::RegisterBenchmark(name.c_str(), berth::bench::BM_QueuePass, std::string(policy), queued, full)
            ->Unit(benchmark::kMicrosecond)
            ->Iterations(queued >= 1'000'000 ? 10 : queued >= 100'000 ? 50 : 1000);
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
