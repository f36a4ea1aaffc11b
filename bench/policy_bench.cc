// Single-GPU decisions per policy: what every product policy costs per
// decision on a 70%-full cluster, at three sizes.
//
// For each size (12,500, 1,250 and 125 nodes of 8 H100 GPUs: 100,000, 10,000
// and 1,000 GPUs, spec "Nx8:H100/leaf=32/spine=16"), one fill is built with
// `binpack` (bench_fill.h: seeded 1/2/4/8-GPU tasks to 70%, then churn), and
// every policy's scheduler adopts exactly those placements, so all policies
// decide on the same state. Each iteration is one decision in a steady
// stream, as in placement_bench: a 1-GPU job is submitted and scheduled
// (timed), then a random running 1-GPU job finishes.
//
//   PolicyDecision/<policy>/<nodes>       the policy as registered (fast path)
//   PolicyDecision/<policy>/<nodes>/scan  the same with every node filtered
//                                         and scored (SchedulerOptions::
//                                         full_scan: the exactness oracle)
//
// items_per_second counts decisions (place + release) per wall second;
// cpu_per_s per CPU second of the process (the machine may be shared).
//
//   build/release/bench/policy_bench --benchmark_format=json
//   build/release/bench/policy_bench --benchmark_filter='/12500$'
#include <benchmark/benchmark.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_fill.h"
#include "berth/cluster/loaders.h"
#include "berth/plugins/builtin.h"

namespace berth::bench {
namespace {

const int32_t kSizes[] = {12'500, 1'250, 125};

// Policies that need a driver of their own (Gavel rounds) are not measured.
bool Measured(const std::string& policy) { return policy.rfind("gavel", 0) != 0 && policy != "las"; }

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

// One size: the cluster, the fill's jobs and their placements.
struct Fill {
  cluster::Cluster cluster;
  std::vector<job::JobSpec> jobs;  // the running jobs of the fill, in start order
  std::vector<std::vector<framework::TaskPlacement>> placements;
  int64_t next_id = 0;
  std::string hash;
};

StatusOr<const Fill*> GetFill(int32_t nodes) {
  static std::map<int32_t, std::unique_ptr<Fill>> fills;
  auto it = fills.find(nodes);
  if (it != fills.end()) return it->second.get();
  Registries& r = TheRegistries();
  if (!r.error.empty()) return Internal(r.error);
  auto f = std::make_unique<Fill>();
  BERTH_ASSIGN_OR_RETURN(f->cluster, cluster::ParseClusterSpec(std::to_string(nodes) + "x8:H100/leaf=32/spine=16"));
  BERTH_ASSIGN_OR_RETURN(framework::Profile p, r.policies.Find("binpack"));
  BERTH_ASSIGN_OR_RETURN(std::unique_ptr<Bed> bed, MakeBed(f->cluster, p, r.plugins, FillOptions{}));
  for (const RunningJob& j : bed->running) {
    const scheduler::JobRecord* rec = bed->sched->Find(j.id);
    f->jobs.push_back(rec->spec);
    f->placements.push_back(rec->placements);
  }
  f->next_id = bed->next_id;
  f->hash = bed->fill_hash;
  const Fill* raw = f.get();
  fills.emplace(nodes, std::move(f));
  return raw;
}

// A bed for `policy` on the fill of `nodes`: the fill's jobs adopted as they run.
StatusOr<std::unique_ptr<Bed>> AdoptFill(const std::string& policy, int32_t nodes, bool full_scan) {
  BERTH_ASSIGN_OR_RETURN(const Fill* f, GetFill(nodes));
  Registries& r = TheRegistries();
  BERTH_ASSIGN_OR_RETURN(framework::Profile p, r.policies.Find(policy));
  // FGD and berth-frag take their typical pods from the workload: the fill's.
  const framework::PluginContext ctx{&f->cluster, f->jobs};
  BERTH_ASSIGN_OR_RETURN(std::unique_ptr<framework::Framework> fw, framework::Framework::Create(p, r.plugins, ctx));
  auto bed = std::make_unique<Bed>();
  bed->rng.Seed(42);
  scheduler::SchedulerOptions so;
  so.seed = 42;
  so.full_scan = full_scan;
  bed->sched = std::make_unique<scheduler::Scheduler>(f->cluster, std::move(fw), so, bed->clock);
  for (size_t i = 0; i < f->jobs.size(); ++i) {
    BERTH_RETURN_IF_ERROR(bed->sched->Submit(f->jobs[i]));
    BERTH_RETURN_IF_ERROR(bed->sched->Adopt(f->jobs[i].id, f->placements[i], 0));
    if (f->jobs[i].groups[0].gpus == 1) bed->singles.push_back(f->jobs[i].id);
  }
  bed->next_id = f->next_id;
  bed->fill_hash = f->hash;
  return bed;
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

void BM_PolicyDecision(benchmark::State& st, const std::string& policy, int32_t nodes, bool full_scan) {
  StatusOr<std::unique_ptr<Bed>> got = AdoptFill(policy, nodes, full_scan);
  if (!got.ok()) {
    st.SkipWithError(got.status().ToString().c_str());
    return;
  }
  Bed& bed = **got;
  auto& sched = *bed.sched;
  std::vector<int64_t> place_ns;
  const job::JobSpec proto = GpuJob(0, 1);
  int64_t failed = 0;
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
    bed.singles.push_back(id);
    const size_t pick = bed.rng.Uniform(bed.singles.size());
    (void)sched.Finish(bed.singles[pick], job::JobState::kSucceeded);
    bed.singles[pick] = bed.singles.back();
    bed.singles.pop_back();
    place_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
  }
  const double cpu_seconds = CpuSeconds() - cpu_start;
  if (failed) st.SkipWithError("a 1-GPU job did not fit");
  st.SetItemsProcessed(st.iterations());
  st.counters["cpu_per_s"] = static_cast<double>(st.iterations()) / std::max(cpu_seconds, 1e-9);
  st.counters["p50_us"] = Percentile(place_ns, 0.50);
  st.counters["p99_us"] = Percentile(place_ns, 0.99);
  st.counters["nodes"] = nodes;
  st.SetLabel("fill " + bed.fill_hash.substr(0, 8) + " log " + sched.log().HashHex().substr(0, 8));
}

}  // namespace
}  // namespace berth::bench

int main(int argc, char** argv) {
  using berth::bench::BM_PolicyDecision;
  const auto& reg = berth::bench::TheRegistries();
  for (const std::string& policy : reg.policies.Names()) {
    if (!berth::bench::Measured(policy)) continue;
    for (int32_t nodes : berth::bench::kSizes) {
      for (bool scan : {false, true}) {
        const std::string name =
            "PolicyDecision/" + policy + "/" + std::to_string(nodes) + (scan ? "/scan" : "");
        benchmark::RegisterBenchmark(name.c_str(), BM_PolicyDecision, policy, nodes, scan)
            ->MinTime(0.1)
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
