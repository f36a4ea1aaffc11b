// Gang placement at 100,000 GPUs through the product policies: one job of
// 512 or 8,192 GPUs (64 or 1,024 tasks of 8 GPUs) submitted and scheduled by
// the registry's policy as users run it (`--policy NAME`: topology's planner,
// fairshare's, or task by task for fifo and binpack), beside the same policy
// with every node filtered and scored (SchedulerOptions::full_scan, the
// exactness oracle), in one binary so the ratios come from one run.
//
// Cluster "12500x8:H100/leaf=32/spine=16", filled to 70% once by `binpack`
// (bench_fill.h: seeded 1/2/4/8-GPU tasks with churn) and adopted by every
// policy's scheduler. Each iteration submits the gang and runs a pass (timed:
// p50/p99_us, cpu_us_per_gang), then the gang finishes (its release is not
// timed), so every iteration sees the same fill.
//
//   build/release/bench/gang_bench [--benchmark_format=json]
#include <benchmark/benchmark.h>

#include <time.h>

#include <algorithm>
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

const char* const kPolicies[] = {"topology", "fairshare", "fifo", "binpack"};

struct World {
  cluster::Cluster cluster;
  framework::PluginRegistry plugins;
  framework::PolicyRegistry policies;
  std::unique_ptr<SharedFill> fill;
  std::map<std::string, double> cpu_us;  // per gang, by benchmark name
  std::string error;
};

World& TheWorld() {
  static World* world = [] {
    auto* w = new World();
    auto c = cluster::ParseClusterSpec("12500x8:H100/leaf=32/spine=16");
    if (!c.ok()) {
      w->error = c.status().ToString();
      return w;
    }
    w->cluster = std::move(c).value();
    if (Status s = plugins::RegisterBuiltinPlugins(w->plugins); !s.ok()) w->error = s.ToString();
    if (Status s = plugins::RegisterBuiltinPolicies(w->policies); !s.ok()) w->error = s.ToString();
    if (w->error.empty()) {
      auto f = MakeSharedFill(w->cluster, w->policies, w->plugins, FillOptions{});
      if (f.ok()) w->fill = std::make_unique<SharedFill>(std::move(f).value());
      else w->error = f.status().ToString();
    }
    return w;
  }();
  return *world;
}

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

job::JobSpec Gang(int64_t id, int32_t gpus) {
  job::JobSpec j = GpuJob(id, 8);
  j.name = "gang";
  j.groups.front().count = gpus / 8;
  return j;
}

void BM_GangDecision(benchmark::State& st, const std::string& policy, int32_t gpus, bool scan) {
  World& w = TheWorld();
  if (!w.error.empty()) {
    st.SkipWithError(w.error.c_str());
    return;
  }
  auto got = AdoptFill(*w.fill, policy, w.policies, w.plugins, scan);
  if (!got.ok()) {
    st.SkipWithError(got.status().ToString().c_str());
    return;
  }
  Bed& bed = **got;
  auto& sched = *bed.sched;
  std::vector<double> us;
  bool failed = false;
  const double cpu_start = CpuSeconds();
  for (auto _ : st) {
    const JobId id(bed.next_id++);
    bed.clock.Advance(1);
    const auto t0 = std::chrono::steady_clock::now();
    (void)sched.Submit(Gang(id.value(), gpus));
    sched.Schedule();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    if (sched.Find(id)->state != job::JobState::kRunning) {
      failed = true;
      break;
    }
    st.PauseTiming();
    (void)sched.Finish(id, job::JobState::kSucceeded);
    st.ResumeTiming();
  }
  const double cpu_seconds = CpuSeconds() - cpu_start;
  if (failed) st.SkipWithError("the gang did not fit");
  std::sort(us.begin(), us.end());
  if (!us.empty()) {
    st.counters["p50_us"] = us[us.size() / 2];
    st.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  }
  const double per = 1e6 * cpu_seconds / std::max<double>(1.0, static_cast<double>(st.iterations()));
  st.counters["cpu_us_per_gang"] = per;  // release included (a pause does not stop the process CPU clock)
  st.counters["gpus"] = gpus;
  st.SetLabel("fill " + bed.fill_hash.substr(0, 8) + " log " + sched.log().HashHex().substr(0, 8));
  w.cpu_us[policy + "/" + std::to_string(gpus) + (scan ? "/scan" : "")] = per;
}

}  // namespace
}  // namespace berth::bench

int main(int argc, char** argv) {
  using berth::bench::BM_GangDecision;
  for (const char* policy : berth::bench::kPolicies) {
    for (int32_t gpus : {512, 8192}) {
      for (bool scan : {false, true}) {
        const std::string name =
            "GangDecision/" + std::string(policy) + "/" + std::to_string(gpus) + (scan ? "/scan" : "");
        benchmark::RegisterBenchmark(name.c_str(), BM_GangDecision, std::string(policy), gpus, scan)
            ->Iterations(scan ? 3 : 40)
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  // Per gang, CPU: each policy against its scan (stderr: stdout may be JSON).
  const auto& cpu = berth::bench::TheWorld().cpu_us;
  for (const auto& [name, us] : cpu) {
    if (name.size() > 5 && name.substr(name.size() - 5) == "/scan") continue;
    auto scan = cpu.find(name + "/scan");
    std::fprintf(stderr, "%-16s %10.1f us CPU per gang", name.c_str(), us);
    if (scan != cpu.end()) std::fprintf(stderr, "; scan %10.1f us (%.1fx)", scan->second, scan->second / us);
    std::fprintf(stderr, "\n");
  }
  return 0;
}
