// Gangs across regions in the federation simulator (span.h, fed_sim_span.cc):
// a gang larger than any member runs split only with span_regions, its parts
// start together, a refused part releases the whole job, and a failure of
// one part's member restarts the whole job, which finishes once.
#include <gtest/gtest.h>

#include "berth/federation/fed_report.h"
#include "berth/federation/fed_test_util.h"
#include "berth/federation/span.h"

namespace berth::federation {
namespace {

using namespace testenv;  // NOLINT: the shared set-up

// The failure tests' two regions of 32 GPUs (4 nodes of 8 A100, kFed) with
// their link at 10 Gbit/s, 100 ms, and no dataset; 100 Gbit/s inside each: a
// spanning run takes 0.9 + 0.1 x 10 = 1.9 x.
std::string SpanFedText() {
  std::string t = kFed;
  const std::string link = "bandwidth_gbps: 1, rtt_ms: 100, egress_usd_per_gb: 0.1";
  t.replace(t.find(link), link.size(), "bandwidth_gbps: 10, rtt_ms: 100, egress_usd_per_gb: 0.05");
  t.erase(t.find("datasets:"));
  return t + "span: {comm_fraction: 0.1, gib_per_gpu_hour: 10}\n";
}

job::JobSpec Gang(int64_t i, TimeUs submit, int32_t tasks, double dur_s, bool span, double ckpt_s = 0) {
  job::JobSpec j = Job(i, submit, 8, dur_s, "", ckpt_s);
  j.groups.front().count = tasks;
  j.span_regions = span;
  return j;
}

Env SpanEnv(const std::string& failures = "") { return MakeEnvFromText(SpanFedText() + failures); }

TEST(FedSpan, ParsesTheModelAndSplitsOnlySingleGroupGangs) {
  const Env e = SpanEnv();
  EXPECT_DOUBLE_EQ(e.fed.span.comm_fraction, 0.1);
  EXPECT_DOUBLE_EQ(e.fed.span.gib_per_gpu_hour, 10);
  EXPECT_EQ(e.fed.span.max_parts, 4);
  StatusOr<Federation> bad = ParseFederationYaml(std::string(kFed) + "span: {comm_fraction: 2}\n", "t.yaml", Loader());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("span.comm_fraction: must be at most 1"), std::string::npos);
  EXPECT_TRUE(Splittable(Gang(0, 0, 6, 100, true)));
  EXPECT_FALSE(Splittable(Gang(0, 0, 6, 100, false)));
  EXPECT_FALSE(Splittable(Gang(0, 0, 1, 100, true)));  // one task: nothing to split
  job::JobSpec two = Gang(0, 0, 6, 100, true);
  two.groups.push_back(two.groups.front());
  EXPECT_FALSE(Splittable(two));
  // The model: 1000 s in one region, 1.9 x across; plus one RTT per step.
  const int32_t regions[] = {0, 1};
  const SpanRing ring = RingOf(e.fed, regions);
  EXPECT_DOUBLE_EQ(ring.bandwidth_gbps, 10);
  EXPECT_DOUBLE_EQ(ring.intra_gbps, 100);
  EXPECT_EQ(SpanRunTime(e.fed, ring, SecondsToUs(1000), 0), SecondsToUs(1900));
  EXPECT_EQ(SpanRunTime(e.fed, ring, SecondsToUs(1000), 100), SecondsToUs(1910));
}

TEST(FedSpan, AGangLargerThanAnyMemberRunsSplitOnlyWithSpanRegions) {
  const Env e = SpanEnv();
  sim::Trace with, without;
  with.jobs.push_back(Gang(0, 0, 6, 1000, true));  // 48 GPUs: more than either member's 32
  without.jobs.push_back(Gang(0, 0, 6, 1000, false));
  for (Policy p : {Policy::kGlobal, Policy::kGlobalCost, Policy::kRoundRobin, Policy::kLeastLoaded}) {
    const FedResult a = Simulate(e, with, p);
    EXPECT_EQ(a.jobs_finished, 1) << PolicyName(p);
    EXPECT_EQ(a.spanning_jobs, 1) << PolicyName(p);
    EXPECT_EQ(a.spanning_parts, 2) << PolicyName(p);
    EXPECT_EQ(a.ran_twice, 0);
    const FedResult b = Simulate(e, without, p);
    EXPECT_EQ(b.jobs_finished, 0) << PolicyName(p);
    EXPECT_EQ(b.jobs_lost, 1) << PolicyName(p);  // no member may hold it: reported unfit
    EXPECT_EQ(b.spanning_jobs, 0);
  }
  const FedResult g = Simulate(e, with, Policy::kGlobal);
  // Admissions back by 100 ms (west's round trip), the start 50 ms later, then 1.9 x 1000 s.
  EXPECT_NEAR(g.jct_s.mean, 1900.15, 0.01);
  // 10 GiB per GPU-hour of job time: 48 GPUs x 1000 s, each byte at 0.05 USD/GB.
  const double gib = 10.0 * 48 * 1000 / 3600;
  EXPECT_NEAR(g.cross_region_bytes, gib * kGiB, 1e3);
  EXPECT_NEAR(g.egress_cost, gib * 0.05, 1e-6);
  // East holds four tasks, west two: GPU cost at each member's price, held from admission.
  EXPECT_EQ(g.members[0].jobs, 1);
  EXPECT_NEAR(g.gpu_cost, 32 * 2.0 * 1900.15 / 3600 + 16 * 1.0 * 1900.10 / 3600, 0.01);
  const std::string json = FedResultsToJson({g});
  EXPECT_NE(json.find("\"spanning_jobs\": 1"), std::string::npos) << json;
  EXPECT_NE(json.find("\"spanning_parts\": 2"), std::string::npos);
}

TEST(FedSpan, GlobalKeepsAGangWholeWhenAMemberHoldsIt) {
  const Env e = SpanEnv();
  sim::Trace t;
  t.jobs.push_back(Gang(0, 0, 4, 1000, true));  // 32 GPUs: one member holds it, at 1 x
  const FedResult r = Simulate(e, t, Policy::kGlobal);
  EXPECT_EQ(r.spanning_jobs, 0);
  EXPECT_NEAR(r.jct_s.mean, 1000, 0.1);
}

TEST(FedSpan, PartsStartAtTheSameInstant) {
  const Env e = SpanEnv();
  sim::Trace t;
  t.jobs.push_back(Gang(0, 0, 6, 1000, true));
  t.jobs.push_back(Gang(1, SecondsToUs(5000), 7, 500, true));
  const FedResult r = Simulate(e, t, Policy::kGlobal);
  ASSERT_EQ(r.span_starts.size(), 4u);
  for (size_t k = 0; k < 4; k += 2) {
    EXPECT_EQ(r.span_starts[k].job, r.span_starts[k + 1].job);
    EXPECT_NE(r.span_starts[k].member, r.span_starts[k + 1].member);
    EXPECT_EQ(r.span_starts[k].at, r.span_starts[k + 1].at);  // co-start
  }
  // Each part reached its member at a different time (0.5 ms east, 50 ms west); the start waits for both.
  EXPECT_EQ(r.span_starts[0].at, SecondsToUs(0.15));
  EXPECT_EQ(r.jobs_finished, 2);
}

TEST(FedSpan, ARefusedPartReleasesTheWholeJobAndItIsSentAgain) {
  // West runs R (8 GPUs, until 100.05 s) and queues Q (32 GPUs), which starts
  // the instant R ends. The span S arrives before the digest showing that:
  // its west part, promised on 24 GPUs west no longer has, is refused; the
  // east part is released, S waits for room and runs split once Q is done.
  const Env e = SpanEnv();
  sim::Trace t;
  job::JobSpec r = Gang(0, 0, 1, 100, false);
  r.regions = {"west"};
  job::JobSpec q = Gang(1, SecondsToUs(1), 4, 200, false);
  q.regions = {"west"};
  t.jobs = {r, q, Gang(2, SecondsToUs(100.07), 6, 300, true)};
  const FedResult f = Simulate(e, t, Policy::kGlobal);
  EXPECT_EQ(f.refused_promises, 1);
  EXPECT_EQ(f.redispatches, 1);
  EXPECT_EQ(f.jobs_finished, 3);
  EXPECT_EQ(f.ran_twice, 0);
  EXPECT_EQ(f.spanning_jobs, 1);
  EXPECT_EQ(f.spanning_parts, 2);  // only the second split ran
  ASSERT_EQ(f.span_starts.size(), 2u);
  EXPECT_GT(f.span_starts[0].at, SecondsToUs(300));  // after Q ended (300.05 s at west)
  EXPECT_EQ(f.span_starts[0].at, f.span_starts[1].at);
}

TEST(FedSpan, APartLostOnTheWayReleasesEveryPartWhenItsLeaseLapses) {
  // West fails the instant the job arrives, before the dispatcher can
  // suspect it: the west part is lost on the way, the east part is admitted
  // and held; a lease later every part is released and the job waits for west.
  const Env e = SpanEnv("failures:\n  - {domain: west-1, at_s: 0, for_s: 300}\n");
  sim::Trace t;
  t.jobs.push_back(Gang(0, 0, 6, 1000, true));
  const FedResult r = Simulate(e, t, Policy::kGlobal);
  EXPECT_EQ(r.promises_to_silent, 1);
  EXPECT_EQ(r.refused_promises, 0);
  EXPECT_EQ(r.redispatches, 1);
  EXPECT_EQ(r.jobs_finished, 1);
  EXPECT_EQ(r.ran_twice, 0);
  EXPECT_EQ(r.spanning_parts, 2);
  ASSERT_EQ(r.span_starts.size(), 2u);
  EXPECT_GT(r.span_starts[0].at, SecondsToUs(300));  // once west was back
  EXPECT_EQ(r.span_starts[0].at, r.span_starts[1].at);
  EXPECT_NEAR(r.jct_s.mean, UsToSeconds(r.span_starts[0].at) + 1900, 0.01);
}

TEST(FedSpan, AFailureOfOnePartsMemberRestartsTheWholeJobOnce) {
  // West fails at 500 s for 600 s, 500 s into a 1900 s split run
  // checkpointing every 100 s of job time: both parts stop, the job resumes
  // from its 200 s checkpoint once west is back, split again, and finishes
  // once.
  const Env e = SpanEnv("failures:\n  - {domain: west-1, at_s: 500, for_s: 600}\n");
  sim::Trace t;
  t.jobs.push_back(Gang(0, 0, 6, 1000, true, 100));
  const FedResult r = Simulate(e, t, Policy::kGlobal);
  EXPECT_EQ(r.member_failures, 1);
  EXPECT_EQ(r.jobs_finished, 1);
  EXPECT_EQ(r.jobs_lost, 0);
  EXPECT_EQ(r.jobs_unfinished, 0);
  EXPECT_EQ(r.ran_twice, 0);
  EXPECT_EQ(r.spanning_jobs, 1);
  EXPECT_EQ(r.spanning_parts, 4);
  EXPECT_EQ(r.requeued_running, 1);
  EXPECT_GE(r.redispatches, 1);
  EXPECT_GE(r.stale_copies_cancelled, 1);  // west's stopped part, cancelled when it rejoined
  // Progress at the failure: (500 - 0.15) / 1900 x 1000 s = 263 s of job time, 200 s kept.
  EXPECT_NEAR(r.lost_work_gpu_s, (499.85 / 1900 * 1000 - 200) * 48, 0.5);
  ASSERT_EQ(r.span_starts.size(), 4u);
  EXPECT_EQ(r.span_starts[2].at, r.span_starts[3].at);
  EXPECT_GT(r.span_starts[2].at, SecondsToUs(1100));  // after west rejoined
  // The resumed run: 800 s of job time, 1.9 x; its checkpoint (east, the largest part) moves in shares.
  EXPECT_NEAR(r.jct_s.mean, UsToSeconds(r.span_starts[2].at) + 1520, 0.01);
  EXPECT_GT(r.checkpoint_bytes, 0);
}

TEST(FedSpan, APartitionOfOnePartsMemberStopsTheWholeJob) {
  const Env e = SpanEnv("failures:\n  - {cluster: e1, at_s: 400, for_s: 300, kind: partition}\n");
  sim::Trace t;
  t.jobs.push_back(Gang(0, 0, 6, 1000, true, 100));
  const FedResult r = Simulate(e, t, Policy::kGlobal);
  EXPECT_EQ(r.partitions, 1);
  EXPECT_EQ(r.jobs_finished, 1);
  EXPECT_EQ(r.jobs_lost, 0);
  EXPECT_EQ(r.ran_twice, 0);
  EXPECT_EQ(r.spanning_parts, 4);
  EXPECT_EQ(r.requeued_running, 1);
}

TEST(FedSpan, WithoutSpanningJobsNothingChanges) {
  // The same trace with span_regions on a job that never needs a split: identical figures.
  const Env e = SpanEnv();
  sim::Trace a = EastJobs(), b = EastJobs();
  for (auto& j : b.jobs) j.span_regions = true;  // one task each: never split
  for (Policy p : {Policy::kGlobal, Policy::kDataLocal, Policy::kRoundRobin}) {
    const FedResult x = Simulate(e, a, p), y = Simulate(e, b, p);
    EXPECT_EQ(x.jct_s.mean, y.jct_s.mean) << PolicyName(p);
    EXPECT_EQ(x.cross_region_bytes, y.cross_region_bytes) << PolicyName(p);
    EXPECT_EQ(y.spanning_jobs, 0);
  }
}

}  // namespace
}  // namespace berth::federation
