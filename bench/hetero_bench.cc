// Allocation LP solve time per round (GLPK) with 1,000 and 10,000 active
// jobs on 36 V100 + 36 P100 + 36 K80: Gavel's heterogeneity-aware LAS over
// Gavel's job classes, with identical jobs merged (what the simulator runs)
// and with one row per job.
#include <benchmark/benchmark.h>

#include "berth/common/rng.h"
#include "berth/hetero/allocation_policy.h"
#include "berth/hetero/lp.h"

namespace {

using berth::hetero::PolicyJob;

// Synthetic jobs with speeds drawn like Gavel's classes: 83 classes (model x
// scale), each a fixed speed vector; jobs pick a class uniformly.
std::vector<PolicyJob> MakeJobs(int n, uint64_t seed) {
  berth::Rng rng(seed);
  std::vector<std::vector<double>> classes(83);
  std::vector<int> scales(83);
  for (size_t c = 0; c < classes.size(); ++c) {
    const double v100 = 1 + 50 * rng.UniformReal();
    classes[c] = {v100, v100 * (0.3 + 0.9 * rng.UniformReal()), v100 * (0.05 + 0.6 * rng.UniformReal())};
    const double r = rng.UniformReal();
    scales[c] = r < 0.7 ? 1 : r < 0.8 ? 2 : r < 0.95 ? 4 : 8;
  }
  std::vector<PolicyJob> jobs(n);
  for (int i = 0; i < n; ++i) {
    const size_t c = rng.Uniform(classes.size());
    jobs[i].id = berth::JobId(i);
    jobs[i].scale = scales[c];
    jobs[i].steps_per_s = classes[c];
    jobs[i].ref_factor = classes[c];
    jobs[i].remaining_steps = 1000;
  }
  return jobs;
}

void BM_GavelLasLp(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const bool aggregate = state.range(1) != 0;
  auto jobs = MakeJobs(n, 7);
  std::vector<double> cap{36, 36, 36};
  berth::hetero::AllocationPolicyRegistry reg;
  (void)berth::hetero::RegisterAllocationPolicies(reg);
  berth::hetero::PolicyOptions o;
  o.aggregate_lp = aggregate;
  auto created = reg.Create("gavel-las", o);
  std::unique_ptr<berth::hetero::AllocationPolicy> policy = std::move(created).value();
  int32_t rows = 0;
  for (auto _ : state) {
    auto a = policy->Allocate({jobs, cap});
    if (!a.ok()) state.SkipWithError(a.status().message().c_str());
    rows = a.ok() ? a->lp_rows : 0;
    benchmark::DoNotOptimize(rows);
  }
  state.counters["lp_rows"] = rows;
  state.SetLabel(aggregate ? "identical jobs merged" : "one row per job");
}
BENCHMARK(BM_GavelLasLp)->Args({1000, 1})->Args({10000, 1})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GavelLasLp)->Args({1000, 0})->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_GavelLasLp)->Args({10000, 0})->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
