// Network partitions in the federation simulator (`kind: partition` in
// `failures`): a member cut off from the dispatcher runs on unseen; the
// dispatcher stops promising its capacity once it is silent, the member's
// lease lapses and fences it, its jobs move from their checkpoints, and no
// job is lost or run twice when it heals.
#include <gtest/gtest.h>

#include "berth/federation/fed_report.h"
#include "berth/federation/fed_test_util.h"

namespace berth::federation {
namespace {

using namespace testenv;  // NOLINT: the shared set-up

TEST(FedPartitions, ParsesTheKindWithClearErrors) {
  Env e = MakeEnv("failures:\n  - {cluster: e1, at_s: 100, for_s: 50, kind: partition}\n"
                  "  - {cluster: w1, at_s: 10, kind: outage}\n");
  ASSERT_EQ(e.fed.failures.size(), 2u);
  EXPECT_TRUE(e.fed.failures[0].partition);
  EXPECT_EQ(e.fed.failures[0].label, "partition of cluster e1");
  EXPECT_FALSE(e.fed.failures[1].partition);
  StatusOr<Federation> bad =
      ParseFederationYaml(std::string(kFed) + "failures:\n  - {cluster: e1, at_s: 1, kind: split}\n", "t.yaml", Loader());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("failures[0].kind: expected outage or partition, found 'split'"),
            std::string::npos)
      << bad.status().message();
  // A partition and an outage of one member may not overlap either.
  StatusOr<Federation> both = ParseFederationYaml(
      std::string(kFed) + "failures:\n  - {cluster: e1, at_s: 10, for_s: 100, kind: partition}\n"
                          "  - {domain: east-1, at_s: 50}\n",
      "t.yaml", Loader());
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("failures[1]: cluster e1 is already down then"), std::string::npos);
}

TEST(FedPartitions, ACutOffMemberIsFencedAndItsJobsMoveOnce) {
  // East is cut off at 1000 s for 5000 s. Its lease lapses at 1022.5 s (3/4 of
  // the 30 s timeout): it starts nothing more. The dispatcher marks it down at
  // 1030 s and moves the four queued jobs west; at 1082.5 s east stops its four
  // running jobs at their 600 s checkpoint, and at 1090 s the dispatcher moves
  // them. When the partition heals the eight copies left in the east are
  // cancelled before it schedules again.
  Env e = MakeEnv("failures:\n  - {domain: east-1, at_s: 1000, for_s: 5000, kind: partition}\n");
  const FedResult r = Simulate(e, EastJobs(), Policy::kDataLocal);
  EXPECT_EQ(r.partitions, 1);
  EXPECT_EQ(r.member_failures, 0);
  EXPECT_EQ(r.members_marked_down, 1);
  EXPECT_EQ(r.requeued_queued, 4);
  EXPECT_EQ(r.fenced_requeues, 4);
  EXPECT_EQ(r.requeued_running, 4);
  EXPECT_EQ(r.stale_copies_cancelled, 8);
  EXPECT_EQ(r.jobs_finished, 8);
  EXPECT_EQ(r.jobs_lost, 0);
  EXPECT_EQ(r.ran_twice, 0);
  EXPECT_EQ(r.finished_unseen, 0);
  EXPECT_EQ(r.members[0].jobs, 0);
  EXPECT_EQ(r.members[1].jobs, 8);
  EXPECT_DOUBLE_EQ(r.checkpoint_bytes, 4 * 16 * kGiB);
  // The runs went on until the fence stopped them at 1082.5 s: 482.5 s of work since the checkpoint redone.
  EXPECT_NEAR(r.lost_work_gpu_s, 4 * 8 * 482.5, 4 * 8 * 1.0);
}

TEST(FedPartitions, AShortPartitionLosesNoWork) {
  // Healed before the timeout: nothing moves and, unlike an outage, the
  // running jobs never stopped.
  Env e = MakeEnv("failures:\n  - {cluster: e1, at_s: 1000, for_s: 10, kind: partition}\n");
  const FedResult r = Simulate(e, EastJobs(), Policy::kDataLocal);
  EXPECT_EQ(r.partitions, 1);
  EXPECT_EQ(r.members_marked_down, 0);
  EXPECT_EQ(r.redispatches, 0);
  EXPECT_EQ(r.fenced_requeues, 0);
  EXPECT_EQ(r.lost_work_gpu_s, 0);
  EXPECT_EQ(r.jobs_finished, 8);
  EXPECT_EQ(r.members[0].jobs, 8);
  const FedResult plain = Simulate(MakeEnv(""), EastJobs(), Policy::kDataLocal);
  EXPECT_EQ(r.jct_s.mean, plain.jct_s.mean);
}

TEST(FedPartitions, JobsThatFinishWhileCutOffAreNotRunAgain) {
  // The four running jobs end at 1050 s, while east is cut off and fenced:
  // they finished (their end is in the region's checkpoint store), so the
  // dispatcher does not move them; the four queued ones, which the fenced
  // member did not start, move west.
  Env e = MakeEnv("failures:\n  - {cluster: e1, at_s: 1000, for_s: 5000, kind: partition}\n");
  sim::Trace t;
  for (int k = 0; k < 8; ++k) t.jobs.push_back(Job(k, 0, 8, 1050, "big", 600));
  const FedResult r = Simulate(e, t, Policy::kDataLocal);
  EXPECT_EQ(r.finished_unseen, 4);
  EXPECT_EQ(r.requeued_queued, 4);
  EXPECT_EQ(r.requeued_running, 0);
  EXPECT_EQ(r.fenced_requeues, 0);
  EXPECT_EQ(r.jobs_finished, 8);
  EXPECT_EQ(r.ran_twice, 0);
  EXPECT_EQ(r.members[0].jobs, 4);
  EXPECT_EQ(r.members[1].jobs, 4);
}

TEST(FedPartitions, NoPromiseToAMemberOnceItIsSilent) {
  // East's data and cheaper-to-reach GPUs draw global there. Jobs arriving
  // 15 s after the cut (past one digest interval of silence) go west with no
  // promise made to east; jobs arriving 2 s after it are promised east's
  // capacity (the dispatcher cannot know yet), lost on the way, and moved
  // when east is marked down.
  auto run = [](double arrive_s) {
    Env e = MakeEnv("failures:\n  - {cluster: e1, at_s: 1000, for_s: 3000, kind: partition}\n");
    sim::Trace t;
    t.jobs.push_back(Job(0, 0, 1, 10, "", 0));  // starts the clock at 0
    for (int k = 1; k <= 4; ++k) t.jobs.push_back(Job(k, SecondsToUs(arrive_s), 8, 600, "big", 0));
    return Simulate(e, t, Policy::kGlobal);
  };
  const FedResult late = run(1015);
  EXPECT_EQ(late.promises_to_silent, 0);
  EXPECT_EQ(late.requeued_queued, 0);
  EXPECT_EQ(late.members[1].jobs, 4);
  EXPECT_EQ(late.jobs_finished, 5);
  const FedResult early = run(1002);
  EXPECT_GT(early.promises_to_silent, 0);
  EXPECT_EQ(early.requeued_queued, early.promises_to_silent);
  EXPECT_EQ(early.jobs_finished, 5);
  EXPECT_EQ(early.ran_twice, 0);
}

TEST(FedPartitions, AMemberCutOffForGoodRunsNothingThatMoved) {
  // Never healed: its eight jobs finish in the west; the copies left in the
  // east stay queued there, fenced, and never start.
  Env e = MakeEnv("failures:\n  - {cluster: e1, at_s: 1000, kind: partition}\n");
  const FedResult r = Simulate(e, EastJobs(), Policy::kDataLocal);
  EXPECT_EQ(r.jobs_finished, 8);
  EXPECT_EQ(r.jobs_lost, 0);
  EXPECT_EQ(r.ran_twice, 0);
  EXPECT_EQ(r.requeued_queued + r.requeued_running, 8);
  EXPECT_EQ(r.stale_copies_cancelled, 0);  // it never hears the cancellations
  EXPECT_EQ(r.members[1].jobs, 8);
}

TEST(FedPartitions, EveryPolicyLosesNothingAndRunsNothingTwice) {
  Env e = MakeEnv(
      "failures:\n  - {domain: east-1, at_s: 100, for_s: 2000, kind: partition}\n"
      "  - {cluster: w1, at_s: 3000, for_s: 500, kind: partition}\n  - {cluster: e1, at_s: 4000, for_s: 300}\n");
  sim::Trace t;
  int64_t id = 0;
  for (int k = 0; k < 6; ++k) t.jobs.push_back(Job(id++, 0, 8, 600, k % 2 ? "big" : "", 120));
  for (int k = 0; k < 50; ++k) t.jobs.push_back(Job(id++, SecondsToUs(5.0 + 90 * k), 4, 300 + 10 * k, "", 60));
  for (Policy p : {Policy::kGlobal, Policy::kGlobalCost, Policy::kMultiKueue, Policy::kKarmadaWeights,
                   Policy::kRoundRobin, Policy::kLeastLoaded, Policy::kDataLocal, Policy::kCheapest,
                   Policy::kFastest}) {
    const FedResult r = Simulate(e, t, p);
    EXPECT_EQ(r.partitions, 2) << PolicyName(p);
    EXPECT_EQ(r.member_failures, 1) << PolicyName(p);
    EXPECT_EQ(r.jobs_finished, 56) << PolicyName(p);
    EXPECT_EQ(r.jobs_lost, 0) << PolicyName(p);
    EXPECT_EQ(r.ran_twice, 0) << PolicyName(p);
    EXPECT_EQ(r.members[0].jobs + r.members[1].jobs, 56) << PolicyName(p);
    const FedResult again = Simulate(e, t, p);  // deterministic
    EXPECT_EQ(again.jct_s.mean, r.jct_s.mean) << PolicyName(p);
  }
  const std::string json = FedResultsToJson({Simulate(e, t, Policy::kGlobal)});
  for (const char* key : {"\"partitions\"", "\"fenced_requeues\"", "\"finished_unseen\"", "\"promises_to_silent\"",
                          "\"leases_expired\""})
    EXPECT_NE(json.find(key), std::string::npos) << key;
}

}  // namespace
}  // namespace berth::federation
