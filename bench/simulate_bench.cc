// The simulator: one FGD-protocol experiment on the openb trace (cluster
// openb_node_list_gpu_node.csv, pods openb_pod_list_default.csv resampled to
// 1.3x capacity, seed 42), end to end. items_per_second = pods (arrivals)
// scheduled per second; the time per iteration is the wall time of one
// experiment.
//   FgdExperiment/<policy>: build the arrival order and ranking, then run.
//   FgdFromFiles/<policy>:  also load the cluster and read the trace.
//
//   build/release/bench/simulate_bench [--benchmark_format=json]
#include <benchmark/benchmark.h>

#include <time.h>

#include <algorithm>
#include <memory>
#include <string>

#include "berth/cluster/loaders.h"
#include "berth/plugins/builtin.h"
#include "berth/sim/fgd_protocol.h"
#include "berth/sim/readers/readers.h"
#include "berth/testing/paths.h"

namespace berth::bench {
namespace {

std::string ClusterPath() { return testing::DataDir() + "/alibaba-gpu-v2023/openb_node_list_gpu_node.csv"; }
std::string TracePath() { return testing::DataDir() + "/alibaba-gpu-v2023/openb_pod_list_default.csv"; }

struct Inputs {
  cluster::Cluster cluster;
  sim::Trace trace;
  framework::PluginRegistry plugins;
  framework::PolicyRegistry policies;
};

StatusOr<std::unique_ptr<Inputs>> Load() {
  auto in = std::make_unique<Inputs>();
  BERTH_ASSIGN_OR_RETURN(in->cluster, cluster::LoadCluster(ClusterPath()));
  BERTH_ASSIGN_OR_RETURN(in->trace, sim::ReadTrace(TracePath(), "openb", {}));
  BERTH_RETURN_IF_ERROR(plugins::RegisterBuiltinPlugins(in->plugins));
  BERTH_RETURN_IF_ERROR(plugins::RegisterBuiltinPolicies(in->policies));
  return in;
}

// One experiment on loaded inputs; returns the number of pods.
StatusOr<int64_t> RunOnce(const Inputs& in, const std::string& policy) {
  sim::FgdOptions o;
  o.seed = 42;
  o.load = 1.3;
  BERTH_ASSIGN_OR_RETURN(sim::FgdInput input, sim::BuildFgdInput(in.cluster, in.trace, o));
  BERTH_ASSIGN_OR_RETURN(framework::Profile profile, in.policies.Find(policy));
  BERTH_ASSIGN_OR_RETURN(sim::PolicyResult r, sim::RunFgd(in.cluster, input, profile, in.plugins, o));
  benchmark::DoNotOptimize(r.gpu_allocation_ratio);
  return r.jobs_total;
}

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Rates per second of CPU (the machine may be shared; items_per_second is
// per wall second).
void SetCounters(benchmark::State& st, int64_t pods, double cpu_seconds) {
  st.SetItemsProcessed(pods);
  st.counters["pods"] = static_cast<double>(pods) / static_cast<double>(st.iterations());
  st.counters["cpu_pods_per_s"] = static_cast<double>(pods) / std::max(cpu_seconds, 1e-9);
  st.counters["cpu_s_per_experiment"] = cpu_seconds / static_cast<double>(st.iterations());
}

void BM_FgdExperiment(benchmark::State& st, const std::string& policy) {
  StatusOr<std::unique_ptr<Inputs>> in = Load();
  if (!in.ok()) {
    st.SkipWithError(in.status().ToString().c_str());
    return;
  }
  int64_t pods = 0;
  const double cpu_start = CpuSeconds();
  for (auto _ : st) {
    StatusOr<int64_t> n = RunOnce(**in, policy);
    if (!n.ok()) {
      st.SkipWithError(n.status().ToString().c_str());
      return;
    }
    pods += *n;
  }
  SetCounters(st, pods, CpuSeconds() - cpu_start);
}

void BM_FgdFromFiles(benchmark::State& st, const std::string& policy) {
  int64_t pods = 0;
  const double cpu_start = CpuSeconds();
  for (auto _ : st) {
    StatusOr<std::unique_ptr<Inputs>> in = Load();
    StatusOr<int64_t> n = in.ok() ? RunOnce(**in, policy) : StatusOr<int64_t>(in.status());
    if (!n.ok()) {
      st.SkipWithError(n.status().ToString().c_str());
      return;
    }
    pods += *n;
  }
  SetCounters(st, pods, CpuSeconds() - cpu_start);
}

BENCHMARK_CAPTURE(BM_FgdExperiment, bestfit, std::string("bestfit"))
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK_CAPTURE(BM_FgdExperiment, binpack, std::string("binpack"))
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK_CAPTURE(BM_FgdFromFiles, bestfit, std::string("bestfit"))
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

}  // namespace
}  // namespace berth::bench

BENCHMARK_MAIN();
