// The preemption post-filters keep their candidates and failed searches while
// the scheduler's epoch (SchedulerView::epoch) does not change
// (plugins/preempt/preempt_cache.h). Schedulers with and without
// SchedulerOptions::full_preempt run the same random stream (tenants in a
// tree with guarantees, so that reclaim happens; priorities; gangs; best
// effort; departures; cancellations; a short min-runtime guard, so that the
// cluster stays full and jobs are evicted) and must make the same decisions
// in the same order, give the same verdicts and end with the same hash.
// The same streams against SchedulerOptions::full_pass check the early stop
// of passes that no preemption can help (the jobs it reaches get the same
// verdicts; it may reach fewer), and of its passing over the runs of queues
// whose jobs can get no plan while nothing fits.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/cluster/loaders.h"
#include "berth/common/clock.h"
#include "berth/common/rng.h"
#include "berth/framework/registry.h"
#include "berth/plugins/builtin.h"
#include "berth/scheduler/lockstep_test_util.h"
#include "berth/scheduler/scheduler.h"
#include "berth/scheduler/tree_lockstep_test_util.h"

namespace berth::scheduler {
namespace {

using lockstep::Registries;
using tree_lockstep::kTenants;

job::JobSpec RandomJob(Rng& rng, int64_t id, uint64_t priorities = 3) {
  job::JobSpec j;
  j.id = JobId(id);
  j.name = "j" + std::to_string(id);
  j.tenant = kTenants[rng.Uniform(6)];
  j.priority = static_cast<int32_t>(rng.Uniform(priorities));
  j.duration = SecondsToUs(static_cast<double>(20 + rng.Uniform(200)));
  j.checkpoint_interval = rng.Uniform(2) ? SecondsToUs(7) : 0;
  j.best_effort = rng.Uniform(8) == 0;
  job::TaskGroup g;
  g.name = "w";
  const int32_t sizes[] = {1, 1, 2, 2, 4, 8};
  g.gpus = sizes[rng.Uniform(6)];
  g.count = rng.Uniform(4) == 0 ? 2 + static_cast<int32_t>(rng.Uniform(3)) : 1;
  g.cpu_milli = 1000;
  g.memory_mib = 1024;
  j.groups.push_back(g);
  return j;
}

// The oracle the fast scheduler is compared with.
enum class Oracle {
  kFullPreempt,  // preemption without the per-epoch cache
  kFullPass,     // no early stop, a preemption try for every blocked job
};

struct Counts {
  int64_t preemptions = 0;
  int64_t stopped = 0;  // kFullPass: passes where the fast one reached fewer jobs
  int64_t passed_over = 0;  // runs of a queue's jobs the fast passes went past
};

void RunLockstep(const std::string& policy, uint64_t seed, bool with_tree, int steps, Counts* counts,
                 Oracle oracle = Oracle::kFullPreempt, uint64_t priorities = 3) {
  Registries reg;
  Rng rng(seed);
  auto cluster = cluster::ParseClusterSpec("6x8:H100/leaf=2");
  ASSERT_TRUE(cluster.ok());
  SchedulerOptions opts;
  opts.seed = seed;
  if (with_tree) opts.queues = tree_lockstep::Tree(*cluster, rng, {.leaf_weights = 3, .guarantees = true});
  opts.usage_half_life = rng.Uniform(2) ? SecondsToUs(30) : 0;
  SchedulerOptions full_opts = opts;
  (oracle == Oracle::kFullPreempt ? full_opts.full_preempt : full_opts.full_pass) = true;
  framework::Profile profile = *reg.policies.Find(policy);
  ASSERT_TRUE(plugins::SetMinRuntime(profile, SecondsToUs(static_cast<double>(5 + rng.Uniform(30)))).ok());
  ManualClock clock(0);
  // Priorities known in advance, as in a replay (the floor shortcut).
  std::vector<job::JobSpec> workload;
  if (rng.Uniform(2)) {
    Rng wrng(seed + 1000);
    for (int i = 0; i < 50; ++i) workload.push_back(RandomJob(wrng, i, priorities));
  }
  const framework::PluginContext context{&*cluster, workload};
  auto fa = framework::Framework::Create(profile, reg.plugins, context);
  auto fb = framework::Framework::Create(profile, reg.plugins, context);
  ASSERT_TRUE(fa.ok() && fb.ok()) << fa.status().ToString();
  Scheduler fast(*cluster, std::move(fa).value(), opts, clock);
  Scheduler full(*cluster, std::move(fb).value(), full_opts, clock);
  std::vector<JobId> running, pending;
  int64_t next_id = 0;
  for (int step = 0; step < steps; ++step) {
    clock.Advance(SecondsToUs(static_cast<double>(1 + rng.Uniform(5))));
    const uint64_t op = rng.Uniform(20);
    if (op < 10) {
      // Arrivals in bursts: passes over a queue of several blocked jobs.
      const int n = 1 + static_cast<int>(rng.Uniform(4));
      for (int k = 0; k < n; ++k) {
        const job::JobSpec j = RandomJob(rng, next_id++, priorities);
        ASSERT_TRUE(fast.Submit(j).ok());
        ASSERT_TRUE(full.Submit(j).ok());
        pending.push_back(j.id);
      }
    } else if (op < 14) {
      tree_lockstep::FinishOne(fast, full, running, rng);
    } else if (op < 15) {
      tree_lockstep::CancelOne(fast, full, pending, rng);
    }
    if (::testing::Test::HasFatalFailure()) return;
    const std::string what = policy + " seed " + std::to_string(seed) + " step " + std::to_string(step);
    counts->preemptions +=
        oracle == Oracle::kFullPreempt
            ? tree_lockstep::PassAndCompare(fast, full, running, pending, what)
            : tree_lockstep::PassAndCompareReached(fast, full, running, pending, what, &counts->stopped);
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(fast.log().entries(), 0);
  if (oracle == Oracle::kFullPass) EXPECT_EQ(full.queue_runs_passed_over(), 0);
  counts->passed_over += fast.queue_runs_passed_over();
}

TEST(PreemptEpochLockstep, FairshareSameDecisionsAsFullPreempt) {
  Counts counts;
  for (uint64_t seed = 1; seed <= 10; ++seed) RunLockstep("fairshare", seed, seed % 2 == 0, 500, &counts);
  EXPECT_GT(counts.preemptions, 0);  // the streams do evict
}

TEST(PreemptEpochLockstep, FairshareBackfillSameDecisionsAsFullPreempt) {
  Counts counts;
  for (uint64_t seed = 1; seed <= 6; ++seed) RunLockstep("fairshare-backfill", seed, seed % 2 == 1, 500, &counts);
  EXPECT_GT(counts.preemptions, 0);
}

TEST(PreemptEpochLockstep, PriorityPreemptSameDecisionsAsFullPreempt) {
  Counts counts;
  for (uint64_t seed = 1; seed <= 6; ++seed) RunLockstep("priority-preempt", seed, seed % 2 == 0, 500, &counts);
  for (uint64_t seed = 1; seed <= 4; ++seed) RunLockstep("priority-preempt-lpf", seed, seed % 2 == 1, 500, &counts);
  EXPECT_GT(counts.preemptions, 0);
}

// The early stop (PostFilterPlugin::NoPlanForAny) against full passes: with
// guarantees (reclaim possible, so the promise is often refused), with
// priorities alone, and with one priority and no tree (unconstrained
// leaves: no job can ever evict, so every pass that finds nothing free may
// stop).
TEST(PassStopLockstep, FairshareSameDecisionsAsFullPass) {
  Counts counts;
  for (uint64_t seed = 1; seed <= 8; ++seed)
    RunLockstep("fairshare", seed, seed % 2 == 0, 500, &counts, Oracle::kFullPass);
  for (uint64_t seed = 11; seed <= 14; ++seed)
    RunLockstep("fairshare", seed, false, 500, &counts, Oracle::kFullPass, /*priorities=*/1);
  EXPECT_GT(counts.preemptions, 0);
  EXPECT_GT(counts.stopped, 0);  // the fast passes did stop early
  EXPECT_GT(counts.passed_over, 0);  // and went past queues that could not reclaim
}

TEST(PassStopLockstep, PreemptingPoliciesSameDecisionsAsFullPass) {
  Counts counts;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    RunLockstep("fairshare-backfill", seed, seed % 2 == 1, 400, &counts, Oracle::kFullPass);
    RunLockstep("priority-preempt", seed, seed % 2 == 0, 400, &counts, Oracle::kFullPass);
    RunLockstep("priority-preempt-lpf", seed, seed % 2 == 1, 400, &counts, Oracle::kFullPass, /*priorities=*/2);
  }
  EXPECT_GT(counts.preemptions, 0);
  EXPECT_GT(counts.stopped, 0);
}

}  // namespace
}  // namespace berth::scheduler
