// Member failures in the federation simulator: the `failures` section and
// --member-failures file, jobs moved off a member marked down (queued at
// once, running from their last checkpoint, whose bytes move as data), and
// no job lost or run twice when the member rejoins.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "berth/federation/fed_report.h"
#include "berth/federation/fed_test_util.h"

namespace berth::federation {
namespace {

using namespace testenv;  // NOLINT: the shared set-up

TEST(FedFailures, ParsesDomainsAndClustersWithClearErrors) {
  Env e = MakeEnv("failures:\n  - {domain: east-1, at_s: 100, for_s: 50}\n  - {cluster: w1, at_s: 10}\n");
  ASSERT_EQ(e.fed.failures.size(), 2u);
  EXPECT_EQ(e.fed.failures[0].members, std::vector<int32_t>{0});
  EXPECT_EQ(e.fed.failures[0].at, SecondsToUs(100));
  EXPECT_EQ(e.fed.failures[0].duration, SecondsToUs(50));
  EXPECT_EQ(e.fed.failures[1].members, std::vector<int32_t>{1});
  EXPECT_EQ(e.fed.failures[1].duration, -1);  // never comes back
  EXPECT_EQ(e.fed.member_timeout, SecondsToUs(30));
  EXPECT_EQ(e.fed.requeue_running_after, SecondsToUs(60));
  auto error = [](const std::string& failures) {
    StatusOr<Federation> f = ParseFederationYaml(std::string(kFed) + failures, "t.yaml", Loader());
    return f.ok() ? std::string("ok") : f.status().message();
  };
  const std::string nowhere = error("failures:\n  - {domain: nowhere, at_s: 1}\n");
  EXPECT_EQ(nowhere.rfind("t.yaml:", 0), 0u) << nowhere;
  EXPECT_NE(nowhere.find(": failures[0].domain: no cluster has failure_domain 'nowhere'"), std::string::npos)
      << nowhere;
  EXPECT_NE(error("failures:\n  - {cluster: e1, at_s: 1, for_s: 0}\n").find("failures[0].for_s: must be above 0"),
            std::string::npos);
  EXPECT_NE(error("failures:\n  - {at_s: 1}\n").find("needs domain"), std::string::npos);
  EXPECT_NE(error("failures:\n  - {cluster: e1, at_s: 10, for_s: 100}\n  - {domain: east-1, at_s: 50}\n")
                .find("failures[1]: cluster e1 is already down then (failures[0])"),
            std::string::npos);
}

TEST(FedFailures, MemberFailuresFileReplacesTheSection) {
  Env e = MakeEnv("failures:\n  - {domain: east-1, at_s: 100, for_s: 50}\n");
  const std::string path = ::testing::TempDir() + "/member-failures.yaml";
  std::ofstream(path) << "failures:\n  - {cluster: w1, at_s: 7, for_s: 3}\n";
  ASSERT_TRUE(LoadMemberFailures(path, e.fed).ok());
  ASSERT_EQ(e.fed.failures.size(), 1u);
  EXPECT_EQ(e.fed.failures[0].members, std::vector<int32_t>{1});
  EXPECT_EQ(e.fed.failures[0].at, SecondsToUs(7));
  std::ofstream(path) << "failures:\n  - {cluster: x9, at_s: 7}\n";
  const Status s = LoadMemberFailures(path, e.fed);
  EXPECT_NE(s.message().find("member-failures.yaml:2: failures[0].cluster: no cluster named 'x9'"), std::string::npos)
      << s.message();
  std::remove(path.c_str());
}

TEST(FedFailures, NoFailuresChangesNothing) {
  Env plain = MakeEnv("");
  Env later = MakeEnv("failures:\n  - {domain: east-1, at_s: 900000, for_s: 10}\n");  // after every job ended
  const sim::Trace t = EastJobs();
  for (Policy p : {Policy::kGlobal, Policy::kDataLocal, Policy::kMultiKueue}) {
    const FedResult a = Simulate(plain, t, p), b = Simulate(later, t, p);
    EXPECT_EQ(a.jct_s.mean, b.jct_s.mean) << PolicyName(p);
    EXPECT_EQ(a.cross_region_bytes, b.cross_region_bytes) << PolicyName(p);
    EXPECT_EQ(a.member_failures, 0);
    EXPECT_EQ(b.member_failures, 1);
    EXPECT_EQ(b.redispatches, a.redispatches);
  }
}

TEST(FedFailures, AFailedDomainMovesItsJobsFromTheirCheckpoints) {
  // East fails at 1000 s for 5000 s: marked down at 1030 s, its four queued
  // jobs move west then, its four running ones at 1090 s from their 600 s
  // checkpoint; when it rejoins its eight stale copies are cancelled.
  Env e = MakeEnv("failures:\n  - {domain: east-1, at_s: 1000, for_s: 5000}\n");
  const FedResult r = Simulate(e, EastJobs(), Policy::kDataLocal);
  EXPECT_EQ(r.member_failures, 1);
  EXPECT_EQ(r.members_marked_down, 1);
  EXPECT_EQ(r.jobs_finished, 8);
  EXPECT_EQ(r.jobs_lost, 0);
  EXPECT_EQ(r.ran_twice, 0);
  EXPECT_EQ(r.requeued_queued, 4);
  EXPECT_EQ(r.requeued_running, 4);
  EXPECT_EQ(r.redispatches, 8);
  EXPECT_EQ(r.stale_copies_cancelled, 8);
  EXPECT_EQ(r.members[0].jobs, 0);
  EXPECT_EQ(r.members[1].jobs, 8);
  // Four checkpoints of 8 GPUs x 2 GiB moved east -> west, besides the eight copies of the dataset.
  EXPECT_DOUBLE_EQ(r.checkpoint_bytes, 4 * 16 * kGiB);
  EXPECT_DOUBLE_EQ(r.cross_region_bytes, 4 * 16 * kGiB + 8 * 100 * kGiB);
  EXPECT_NEAR(r.egress_cost, (4 * 16 + 8 * 100) * 0.1, 1e-6);
  // Work since the checkpoint at 600 s is redone: about 400 s x 8 GPUs per running job.
  EXPECT_NEAR(r.lost_work_gpu_s, 4 * 8 * 400.0, 4 * 8 * 1.0);
  // A moved running job has 3000 s left; without checkpoints it would redo all 3600 s.
  sim::Trace none = EastJobs();
  for (auto& j : none.jobs) j.checkpoint_interval = -1;
  const FedResult scratch = Simulate(e, none, Policy::kDataLocal);
  EXPECT_EQ(scratch.jobs_finished, 8);
  EXPECT_EQ(scratch.checkpoint_bytes, 0);
  EXPECT_NEAR(scratch.lost_work_gpu_s, 4 * 8 * 1000.0, 4 * 8 * 1.0);
  EXPECT_GT(scratch.jct_s.mean, r.jct_s.mean);
}

TEST(FedFailures, ABlipShorterThanTheTimeoutMovesNothing) {
  Env e = MakeEnv("failures:\n  - {cluster: e1, at_s: 1000, for_s: 10}\n");
  const FedResult r = Simulate(e, EastJobs(), Policy::kDataLocal);
  EXPECT_EQ(r.member_failures, 1);
  EXPECT_EQ(r.members_marked_down, 0);
  EXPECT_EQ(r.redispatches, 0);
  EXPECT_EQ(r.jobs_finished, 8);
  EXPECT_EQ(r.ran_twice, 0);
  EXPECT_EQ(r.members[0].jobs, 8);  // the running four resumed there from their checkpoints
  EXPECT_NEAR(r.lost_work_gpu_s, 4 * 8 * 400.0, 4 * 8 * 1.0);
}

TEST(FedFailures, BackBeforeTheRequeueKeepsItsRunningJobs) {
  // Marked down at 1030 s (the queued four move), back at 1040 s: the four
  // that ran there resume there, and the moved copies never start there.
  Env e = MakeEnv("failures:\n  - {domain: east-1, at_s: 1000, for_s: 40}\n");
  const FedResult r = Simulate(e, EastJobs(), Policy::kDataLocal);
  EXPECT_EQ(r.members_marked_down, 1);
  EXPECT_EQ(r.requeued_queued, 4);
  EXPECT_EQ(r.requeued_running, 0);
  EXPECT_EQ(r.stale_copies_cancelled, 4);
  EXPECT_EQ(r.jobs_finished, 8);
  EXPECT_EQ(r.ran_twice, 0);
  EXPECT_EQ(r.members[0].jobs, 4);
  EXPECT_EQ(r.members[1].jobs, 4);
}

TEST(FedFailures, EveryPolicyLosesNothingAndRunsNothingTwice) {
  Env e = MakeEnv(
      "failures:\n  - {domain: east-1, at_s: 100, for_s: 2000}\n  - {cluster: w1, at_s: 3000, for_s: 500}\n");
  sim::Trace t;
  int64_t id = 0;
  for (int k = 0; k < 6; ++k) t.jobs.push_back(Job(id++, 0, 8, 600, k % 2 ? "big" : "", 120));
  for (int k = 0; k < 40; ++k) t.jobs.push_back(Job(id++, SecondsToUs(5.0 + 90 * k), 4, 300 + 10 * k, "", 60));
  for (Policy p : {Policy::kGlobal, Policy::kGlobalCost, Policy::kMultiKueue, Policy::kKarmadaWeights,
                   Policy::kRoundRobin, Policy::kLeastLoaded, Policy::kDataLocal, Policy::kCheapest,
                   Policy::kFastest}) {
    const FedResult r = Simulate(e, t, p);
    EXPECT_EQ(r.member_failures, 2) << PolicyName(p);
    EXPECT_EQ(r.members_marked_down, 2) << PolicyName(p);
    EXPECT_EQ(r.jobs_finished, 46) << PolicyName(p);
    EXPECT_EQ(r.jobs_lost, 0) << PolicyName(p);
    EXPECT_EQ(r.ran_twice, 0) << PolicyName(p);
    EXPECT_GT(r.redispatches, 0) << PolicyName(p);
    EXPECT_EQ(r.members[0].jobs + r.members[1].jobs, 46) << PolicyName(p);
    const FedResult again = Simulate(e, t, p);  // deterministic
    EXPECT_EQ(again.jct_s.mean, r.jct_s.mean) << PolicyName(p);
  }
}

TEST(FedFailures, JobsOnlyTheFailedMemberMayRunWaitForIt) {
  Env e = MakeEnv("failures:\n  - {cluster: e1, at_s: 100, for_s: 1000}\n");
  sim::Trace t;
  for (int k = 0; k < 3; ++k) {
    job::JobSpec j = Job(k, SecondsToUs(200.0 + k), 8, 300, "", 0);
    j.regions = {"east"};
    t.jobs.push_back(j);
  }
  const FedResult r = Simulate(e, t, Policy::kGlobal);
  EXPECT_EQ(r.jobs_finished, 3);
  EXPECT_EQ(r.jobs_lost, 0);
  EXPECT_EQ(r.members[0].jobs, 3);
  EXPECT_GT(r.jct_s.mean, 800);  // they waited for it to come back at 1100 s
  const std::string json = FedResultsToJson({r});
  for (const char* key : {"\"member_failures\"", "\"members_marked_down\"", "\"requeued_queued\"",
                          "\"requeued_running\"", "\"checkpoint_bytes\"", "\"lost_work_gpu_s\"",
                          "\"stale_copies_cancelled\"", "\"ran_twice\"", "\"jobs_lost\"", "\"redispatches\""})
    EXPECT_NE(json.find(key), std::string::npos) << key;
}

// Global resumes a job where it finishes first counting the checkpoint's
// move: a large checkpoint keeps it in its region on slower cards.
TEST(FedFailures, GlobalWeighsTheCheckpointWhereItResumes) {
  auto run = [](double gib_per_gpu) {
    const std::string text = R"(
name: t3
dispatcher_region: east
checkpoint_gib_per_gpu: )" + std::to_string(gib_per_gpu) + R"(
regions:
  - name: east
    clusters:
      - {name: e1, cluster: "4x8:A100", failure_domain: east-1}
      - {name: e2, cluster: "4x8:A100"}
  - name: west
    clusters:
      - {name: w1, cluster: "4x8:A100"}
links:
  - {from: east, to: west, bandwidth_gbps: 1, rtt_ms: 100, egress_usd_per_gb: 0.1}
failures:
  - {cluster: e1, at_s: 1000}
)";
    Env e;
    StatusOr<Federation> f = ParseFederationYaml(text, "t3.yaml", Loader());
    EXPECT_TRUE(f.ok()) << f.status().message();
    e.fed = std::move(f).value();
    e.speed = {{2.0}, {1.0}, {1.5}};  // e1 fastest, then w1, then e2
    EXPECT_TRUE(plugins::RegisterBuiltinPlugins(e.plugins).ok());
    framework::PolicyRegistry policies;
    EXPECT_TRUE(plugins::RegisterBuiltinPolicies(policies).ok());
    e.profile = *policies.Find("bestfit");
    sim::Trace t;
    for (int k = 0; k < 4; ++k) t.jobs.push_back(Job(k, 0, 8, 36000, "", 600));
    return Simulate(e, t, Policy::kGlobal);
  };
  // 4,000 GiB per job over 1 Gbit/s takes about 9.5 hours: resuming on e2 (slower cards, no move) finishes first.
  const FedResult big = run(500);
  EXPECT_EQ(big.requeued_running, 4);
  EXPECT_EQ(big.members[1].jobs, 4);
  EXPECT_EQ(big.checkpoint_bytes, 0);
  // With no checkpoint to move, the faster cards in the west win.
  const FedResult none = run(0);
  EXPECT_EQ(none.requeued_running, 4);
  EXPECT_EQ(none.members[2].jobs, 4);
  EXPECT_EQ(none.jobs_finished, 4);
  EXPECT_EQ(big.ran_twice + none.ran_twice, 0);
}

TEST(FedFailures, TheEstimatorCountsTheCheckpointMove) {
  Env e = MakeEnv("");
  std::vector<std::vector<TimeUs>> busy(2, std::vector<TimeUs>(2, 0));
  EstimateContext c;
  c.fed = &e.fed;
  c.link_busy = &busy;
  c.now = SecondsToUs(10);
  const DataMove none = PlanCheckpoint(c, Checkpoint{}, 1);
  EXPECT_EQ(none.from_region, -1);
  EXPECT_EQ(none.ready, c.now);
  EXPECT_EQ(PlanCheckpoint(c, Checkpoint{1, 1024}, 1).from_region, -1);  // already in west
  const DataMove move = PlanCheckpoint(c, Checkpoint{0, 16 * 1024}, 1);
  EXPECT_EQ(move.from_region, 0);
  EXPECT_NEAR(move.egress_usd, 1.6, 1e-9);
  // 16 GiB over 1 Gbit/s plus one RTT.
  EXPECT_NEAR(UsToSeconds(move.ready - c.now), 16 * kGiB * 8 / 1e9 + 0.1, 1e-3);
  // After a dataset copy queued on the same link.
  DataMove data;
  data.from_region = 0;
  data.ready = c.now + SecondsToUs(100);
  EXPECT_EQ(PlanCheckpoint(c, Checkpoint{0, 16 * 1024}, 1, &data).ready, move.ready + SecondsToUs(100));
}

}  // namespace
}  // namespace berth::federation
