// The federation simulator: every policy on small federations, and the
// properties the dispatcher must keep (no job lost, no double promise for
// global, data locality, region pins, card speed, determinism).
#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"
#include "berth/federation/fed_report.h"
#include "berth/federation/fed_sim.h"
#include "berth/federation/fed_test_util.h"
#include "berth/plugins/builtin.h"

namespace berth::federation {
namespace {

constexpr const char* kFed = R"(
name: t
dispatcher_region: east
digest_interval_s: 10
regions:
  - name: east
    clusters:
      - {name: e1, cluster: "4x8:A100", default_price: 2}
  - name: west
    clusters:
      - {name: w1, cluster: "4x8:A100", default_price: 1}
links:
  - {from: east, to: west, bandwidth_gbps: 1, rtt_ms: 100, egress_usd_per_gb: 0.1}
datasets:
  - {name: big, size_gib: 100, regions: [east]}
  - {name: small, size_gib: 1, regions: [west], read: streamed}
)";

using testenv::Env;

Env MakeEnv(const std::string& text) { return testenv::MakeEnvFromText(text); }

job::JobSpec Job(int64_t i, TimeUs submit, int32_t tasks, int32_t gpus, double dur_s, std::string dataset = "") {
  job::JobSpec j;
  j.id = JobId(i);
  j.name = "j" + std::to_string(i);
  j.submit_time = submit;
  j.duration = SecondsToUs(dur_s);
  j.dataset = std::move(dataset);
  job::TaskGroup g;
  g.name = "w";
  g.count = tasks;
  g.gpus = gpus;
  j.groups.push_back(g);
  return j;
}

using testenv::Simulate;

// A burst of 8-GPU jobs, more than one cluster holds, then a steady stream.
sim::Trace Burst() {
  sim::Trace t;
  int64_t id = 0;
  for (int k = 0; k < 6; ++k) t.jobs.push_back(Job(id++, 0, 1, 8, 600, k % 2 ? "big" : ""));
  for (int k = 0; k < 40; ++k) t.jobs.push_back(Job(id++, SecondsToUs(5.0 + 30 * k), 1, 4, 300 + 10 * k));
  return t;
}

TEST(FedSim, EveryPolicyFinishesEveryJob) {
  Env e = MakeEnv(kFed);
  const sim::Trace t = Burst();
  for (Policy p : {Policy::kGlobal, Policy::kGlobalCost, Policy::kMultiKueue, Policy::kKarmadaWeights,
                   Policy::kRoundRobin, Policy::kLeastLoaded, Policy::kDataLocal, Policy::kCheapest,
                   Policy::kFastest}) {
    FedResult r = Simulate(e, t, p);
    EXPECT_EQ(r.jobs_total, 46) << PolicyName(p);
    EXPECT_EQ(r.jobs_finished, 46) << PolicyName(p);
    EXPECT_EQ(r.jobs_lost, 0) << PolicyName(p);
    EXPECT_EQ(r.members.size(), 2u);
    EXPECT_GT(r.jct_s.mean, 0);
  }
}

TEST(FedSim, GlobalNeverPromisesTheSameGpusTwice) {
  Env e = MakeEnv(kFed);
  const sim::Trace t = Burst();
  EXPECT_EQ(Simulate(e, t, Policy::kGlobal).double_promises, 0);
  // least-loaded reads the stale digest: the burst lands where the last digest showed room.
  EXPECT_GT(Simulate(e, t, Policy::kLeastLoaded).double_promises, 0);
}

TEST(FedSim, GlobalKeepsBigDataWhereItIs) {
  Env e = MakeEnv(kFed);
  sim::Trace t;
  for (int k = 0; k < 8; ++k) t.jobs.push_back(Job(k, SecondsToUs(1000.0 * k), 1, 8, 600, "big"));
  const FedResult g = Simulate(e, t, Policy::kGlobal);
  const FedResult rr = Simulate(e, t, Policy::kRoundRobin);
  EXPECT_EQ(g.cross_region_bytes, 0);
  EXPECT_GT(rr.cross_region_bytes, 0);
  EXPECT_LT(g.jct_s.mean, rr.jct_s.mean);  // staging 100 GiB over 1 Gbit/s takes 14 minutes
  EXPECT_EQ(Simulate(e, t, Policy::kDataLocal).cross_region_bytes, 0);
}

TEST(FedSim, RegionPinsAndExclusionsHold) {
  Env e = MakeEnv(kFed);
  sim::Trace t;
  for (int k = 0; k < 6; ++k) {
    job::JobSpec j = Job(k, SecondsToUs(10.0 * k), 1, 8, 100);
    if (k % 2) j.regions = {"west"}; else j.avoid_regions = {"east"};
    t.jobs.push_back(j);
  }
  for (Policy p : {Policy::kGlobal, Policy::kRoundRobin, Policy::kMultiKueue}) {
    const FedResult r = Simulate(e, t, p);
    EXPECT_EQ(r.members[0].jobs, 0) << PolicyName(p);
    EXPECT_EQ(r.members[1].jobs, 6) << PolicyName(p);
  }
  // A job no member may run is lost, not stuck.
  t.jobs[0].regions = {"north"};
  EXPECT_EQ(Simulate(e, t, Policy::kGlobal).jobs_lost, 1);
}

TEST(FedSim, GlobalPicksTheFasterCard) {
  Env e = MakeEnv(kFed);
  e.speed[1][0] = 2.0;  // west's cards run twice as fast
  sim::Trace t;
  t.jobs.push_back(Job(0, 0, 1, 8, 1000));
  const FedResult r = Simulate(e, t, Policy::kGlobal);
  EXPECT_EQ(r.members[1].jobs, 1);
  EXPECT_NEAR(r.jct_s.mean, 500 + 0.05, 0.01);  // plus the dispatch delay (half of 100 ms)
}

TEST(FedSim, DeadlinesAndCost) {
  Env e = MakeEnv(kFed);
  sim::Trace t;
  for (int k = 0; k < 4; ++k) {
    job::JobSpec j = Job(k, SecondsToUs(2000.0 * k), 1, 8, 600);
    j.deadline = SecondsToUs(3600);
    t.jobs.push_back(j);
  }
  const FedResult cost = Simulate(e, t, Policy::kGlobalCost);
  EXPECT_EQ(cost.deadline_jobs, 4);
  EXPECT_EQ(cost.deadline_misses, 0);
  EXPECT_EQ(cost.members[1].jobs, 4);  // west is cheaper and meets every deadline
  EXPECT_LE(cost.gpu_cost, Simulate(e, t, Policy::kGlobal).gpu_cost);
}

TEST(FedSim, BatchesAreAssignedWithoutDoublePromises) {
  Env e = MakeEnv(kFed);
  sim::Trace t;
  for (int k = 0; k < 12; ++k) t.jobs.push_back(Job(k, 0, 1, k % 3 == 0 ? 8 : 4, 600 + k));
  const FedResult r = Simulate(e, t, Policy::kGlobal);
  EXPECT_EQ(r.batches, 1);
  EXPECT_EQ(r.double_promises, 0);
  EXPECT_EQ(r.jobs_finished, 12);
  // 64 GPUs, 64 asked: every job starts on arrival, none refused.
  EXPECT_EQ(r.redispatches, 0);
  EXPECT_LT(r.queue_delay_s.max, 1.0);
}

TEST(FedSim, MultiKueueWithdrawsTheLosingCopies) {
  Env e = MakeEnv(kFed);
  const sim::Trace t = Burst();
  const FedResult r = Simulate(e, t, Policy::kMultiKueue);
  EXPECT_EQ(r.jobs_finished, 46);
  // Both members start copies of the burst before the withdrawals arrive.
  EXPECT_GT(r.double_promises, 0);
}

TEST(FedSim, DeterministicAndJson) {
  Env e = MakeEnv(kFed);
  const sim::Trace t = Burst();
  const FedResult a = Simulate(e, t, Policy::kGlobal), b = Simulate(e, t, Policy::kGlobal);
  EXPECT_EQ(a.jct_s.mean, b.jct_s.mean);
  EXPECT_EQ(a.digests, b.digests);
  const std::string json = FedResultsToJson({a});
  for (const char* key : {"\"policy\"", "\"jct_mean_s\"", "\"jct_p99_s\"", "\"queue_delay_mean_s\"",
                          "\"cross_region_bytes\"", "\"egress_cost\"", "\"gpu_cost\"", "\"deadline_misses\"",
                          "\"double_promises\"", "\"redispatches\"", "\"jobs_total\"", "\"jobs_finished\"",
                          "\"jobs_lost\"", "\"makespan_s\"", "\"utilization\""})
    EXPECT_NE(json.find(key), std::string::npos) << key;
}

}  // namespace
}  // namespace berth::federation
