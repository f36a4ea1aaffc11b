// One preemption decision at 100,000 GPUs: a 512-GPU gang (64 x 8 GPUs,
// priority 10) that cannot be placed on a full cluster of 12,500 nodes x 8
// H100 (leaves of 32 nodes, spines of 16 leaves) running 50,000 tasks.
// Measures the `preempt` post-filter (candidates, per-node index, the greedy
// search in every spine that could hold the gang, prune) and the
// `preempt-lowest-priority` baseline on the same input, in the same binary.
// Per-decision latencies are reported as p50/p99 counters in milliseconds,
// wall clock (p50_ms, p99_ms) and CPU time of the thread (cpu_p50_ms,
// cpu_p99_ms: the machine is shared), with the chosen plan's victims and
// GPU-hours lost.
//
// The running jobs (seed 7): every node's 8 GPUs are cut into tasks by one of
// nine patterns ([8], [4,4], [2,2,4], [2,2,2,2], [1,1,2,4], [1,1,2,2,2],
// [1,1,1,1,2,2], [1,1,1,1,1,1,2], [1 x 8]); a third of the whole-node tasks
// start a gang that takes the next 1..8 nodes of its leaf whole: 4 tasks per
// node on average. Priorities 0 / 5 /
// 10 with probability 0.5 / 0.3 / 0.2; started 1..48 h ago; checkpoint every
// 30 min, 1 h or 2 h, or never (a quarter each).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>

#include "berth/cluster/loaders.h"
#include "berth/common/rng.h"
#include "berth/plugins/builtin.h"
#include "berth/scheduler/scheduler.h"

namespace berth {
namespace {

constexpr TimeUs kHour = 3600 * kUsPerSecond;

struct Fixture {
  std::unique_ptr<cluster::Cluster> cluster;
  ManualClock clock;
  std::unique_ptr<scheduler::Scheduler> sched[2];  // preempt, preempt-lowest-priority
  JobId gang;
  int64_t tasks = 0;
  int64_t jobs = 0;
};

// Places the same seeded jobs on a scheduler of the given policy.
std::unique_ptr<scheduler::Scheduler> Fill(const cluster::Cluster& c, const std::string& policy, ManualClock& clock,
                                           int64_t& tasks_out, int64_t& jobs_out) {
  framework::PluginRegistry plugins;
  (void)plugins::RegisterBuiltinPlugins(plugins);
  framework::PolicyRegistry policies;
  (void)plugins::RegisterBuiltinPolicies(policies);
  auto fw = framework::Framework::Create(*policies.Find(policy), plugins);
  auto s = std::make_unique<scheduler::Scheduler>(c, std::move(fw).value(), scheduler::SchedulerOptions{}, clock);
  Rng rng(7);
  static const std::vector<std::vector<int>> kPatterns = {
      {8}, {4, 4}, {2, 2, 4}, {2, 2, 2, 2}, {1, 1, 2, 4}, {1, 1, 2, 2, 2}, {1, 1, 1, 1, 2, 2}, {1, 1, 1, 1, 1, 1, 2},
      {1, 1, 1, 1, 1, 1, 1, 1}};
  static const TimeUs kIntervals[] = {-1, kHour / 2, kHour, 2 * kHour};
  static const int32_t kPriorities[] = {0, 0, 0, 0, 0, 5, 5, 5, 10, 10};
  int64_t id = 0, tasks = 0;
  auto start = [&](const std::vector<std::pair<int32_t, uint64_t>>& where, int gpus) {
    job::JobSpec j;
    j.id = JobId(id++);
    j.name = "r" + std::to_string(j.id.value());
    j.priority = kPriorities[rng.Uniform(10)];
    j.checkpoint_interval = kIntervals[rng.Uniform(4)];
    j.groups.push_back(job::TaskGroup{.count = static_cast<int32_t>(where.size()), .gpus = gpus});
    const TimeUs t0 = clock.Now() - kHour - static_cast<TimeUs>(rng.Uniform(47 * 3600)) * kUsPerSecond;
    std::vector<framework::TaskPlacement> placements;
    for (size_t k = 0; k < where.size(); ++k)
      placements.push_back({TaskKey{j.id, static_cast<int32_t>(k)},
                            state::Allocation{NodeId(where[k].first), where[k].second, kMilliPerGpu, 0, 0}});
    (void)s->Submit(j);
    Status st = s->Adopt(j.id, placements, t0);
    if (!st.ok()) std::fprintf(stderr, "adopt: %s\n", st.message().c_str());
    tasks += static_cast<int64_t>(where.size());
  };
  const int32_t nodes = c.num_nodes();
  for (int32_t n = 0; n < nodes;) {
    const auto& pattern = kPatterns[rng.Uniform(kPatterns.size())];
    if (pattern.size() == 1 && rng.Uniform(3) == 0) {
      // A gang of whole nodes inside this node's leaf.
      const int32_t leaf_end = c.domain(c.node(NodeId(n)).domain[static_cast<int>(cluster::Level::kLeaf)]).end.value();
      const int32_t k = std::min<int32_t>(2 + static_cast<int32_t>(rng.Uniform(8)), leaf_end - n);
      std::vector<std::pair<int32_t, uint64_t>> where;
      for (int32_t i = 0; i < k; ++i) where.push_back({n + i, 0xff});
      start(where, 8);
      n += k;
      continue;
    }
    int first = 0;
    for (int g : pattern) {
      start({{n, ((uint64_t{1} << g) - 1) << first}}, g);
      first += g;
    }
    ++n;
  }
  tasks_out = tasks;
  jobs_out = id;
  return s;
}

const Fixture& Full() {
  static Fixture* f = [] {
    auto* fx = new Fixture;
    fx->cluster = std::make_unique<cluster::Cluster>(*cluster::ParseClusterSpec("12500x8:H100/leaf=32/spine=16"));
    fx->clock.Set(100 * kHour);
    const char* policies[] = {"priority-preempt", "priority-preempt-lpf"};
    for (int i = 0; i < 2; ++i) {
      fx->sched[i] = Fill(*fx->cluster, policies[i], fx->clock, fx->tasks, fx->jobs);
      job::JobSpec g;
      g.id = JobId(1'000'000'000);
      g.name = "gang";
      g.priority = 10;
      g.groups.push_back(job::TaskGroup{.count = 64, .gpus = 8});
      (void)fx->sched[i]->Submit(g);
      fx->gang = g.id;
    }
    return fx;
  }();
  return *f;
}

void Report(benchmark::State& st, std::vector<double>& ms, const char* p50, const char* p99) {
  std::sort(ms.begin(), ms.end());
  if (ms.empty()) return;
  st.counters[p50] = ms[ms.size() / 2];
  st.counters[p99] = ms[std::min(ms.size() - 1, ms.size() * 99 / 100)];
}

double ThreadCpuMs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

void Decide(benchmark::State& st, int which) {
  const Fixture& f = Full();
  scheduler::Scheduler& s = *f.sched[which];
  const scheduler::JobRecord* rec = s.Find(f.gang);
  const framework::SchedulerView view{s.state(), s.ledger(), s.running_jobs(), f.clock.Now(), {}};
  const framework::Verdict verdict = framework::Verdict::Unschedulable("capacity", "needs 512 GPUs, 0 free");
  framework::PreemptContext ctx{rec->spec, rec->queue, verdict, view, JobId()};
  auto* pf = const_cast<framework::PostFilterPlugin*>(s.framework().post_filter().front());
  std::vector<double> ms, cpu_ms;
  std::optional<framework::PreemptionPlan> plan;
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = ThreadCpuMs();
    plan = pf->PostFilter(ctx);
    benchmark::DoNotOptimize(plan);
    cpu_ms.push_back(ThreadCpuMs() - c0);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (!plan) st.SkipWithError("no plan");
  }
  Report(st, ms, "p50_ms", "p99_ms");
  Report(st, cpu_ms, "cpu_p50_ms", "cpu_p99_ms");
  st.counters["running_tasks"] = static_cast<double>(f.tasks);
  st.counters["running_jobs"] = static_cast<double>(s.running_jobs().size());
  if (plan) {
    st.counters["victims"] = static_cast<double>(plan->victims.size());
    st.counters["gpu_hours_lost"] = plan->lost_gpu_seconds / 3600.0;
    st.SetLabel(plan->reason.substr(0, plan->reason.find(':')) +
                plan->reason.substr(plan->reason.rfind(')') + 1));
  }
}

void BM_PreemptBerth(benchmark::State& st) { Decide(st, 0); }
void BM_PreemptLowestPriority(benchmark::State& st) { Decide(st, 1); }

BENCHMARK(BM_PreemptBerth)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_PreemptLowestPriority)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace
}  // namespace berth

BENCHMARK_MAIN();
