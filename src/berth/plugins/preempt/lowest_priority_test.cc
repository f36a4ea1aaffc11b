// The `preempt-lowest-priority` baseline: lowest priority first, then the
// newest, node by node with kube-scheduler's node choice; blind to cost and
// topology; the same candidates as `preempt`.
#include <gtest/gtest.h>

#include "berth/plugins/preempt/preempt_test_util.h"

namespace berth::plugins::preempt {
namespace {

using testing::At;
using testing::kHour;
using testing::kMinute;
using testing::PreemptHarness;
using testing::Victims;

class LowestPriority : public PreemptHarness, public ::testing::Test {
 protected:
  void Make(const std::string& spec) {
    Build(spec, "priority-preempt-lpf");
    clock_.Set(10 * kHour);
  }
};

TEST_F(LowestPriority, NewestOfTheLowestPriorityGoFirst) {
  Make("1x8:H100");
  Start({"old", {At{"node-0", 2, 0}}, 0, "t", 1 * kHour, -1});
  Start({"newer", {At{"node-0", 2, 2}}, 0, "t", 5 * kHour, -1});
  Start({"newest", {At{"node-0", 2, 4}}, 0, "t", 9 * kHour, -1});
  Start({"low", {At{"node-0", 2, 6}}, -1, "t", 2 * kHour, -1});
  // 4 GPUs: priority -1 first, then the newest priority-0 job.
  EXPECT_EQ(Names(Victims(Ask(Submit("j", 1, 4, 10)))), (std::vector<std::string>{"newest", "low"}));
}

TEST_F(LowestPriority, PicksTheNodeWithTheLowestVictimPriorityWhateverTheCost) {
  Make("2x8:H100");
  // node-0: priority 1, checkpointed a minute ago (cheap); node-1: priority 0,
  // ten hours of unsaved work (expensive). kube picks node-1; Berth node-0.
  Start({"cheap", {At{"node-0"}}, 1, "t", 0, 10 * kHour - kMinute});
  Start({"costly", {At{"node-1"}}, 0, "t", 0, -1});
  auto lpf = Ask(Submit("j", 1, 8, 10));
  EXPECT_EQ(Names(Victims(lpf)), (std::vector<std::string>{"costly"}));
  EXPECT_NE(lpf->reason.find("lowest priority first"), std::string::npos) << lpf->reason;
  EXPECT_DOUBLE_EQ(lpf->lost_gpu_seconds, 8.0 * 10 * 3600);

  Build("2x8:H100", "priority-preempt");
  clock_.Set(10 * kHour);
  Start({"cheap", {At{"node-0"}}, 1, "t", 0, 10 * kHour - kMinute});
  Start({"costly", {At{"node-1"}}, 0, "t", 0, -1});
  EXPECT_EQ(Names(Victims(Ask(Submit("j", 1, 8, 10)))), (std::vector<std::string>{"cheap"}));
}

TEST_F(LowestPriority, BlindToTopology) {
  // The two lowest-priority nodes sit in different leaves: the baseline takes
  // them; Berth takes two nodes of one leaf.
  Make("8x8:H100/leaf=4/spine=2");
  for (int n = 0; n < 8; ++n)
    Start({"n" + std::to_string(n), {At{"node-" + std::to_string(n)}}, (n == 0 || n == 4) ? 0 : 1, "t", 0, -1});
  EXPECT_EQ(Names(Victims(Ask(Submit("j", 2, 8, 10)))), (std::vector<std::string>{"n0", "n4"}));
}

TEST_F(LowestPriority, AGangVictimFreesRoomForLaterTasks) {
  // Evicting the 2-node job for the first task also frees node-1 for the second.
  Make("3x8:H100");
  Start({"pair", {At{"node-0"}, At{"node-1"}}, 0, "t", 5 * kHour, -1});
  Start({"other", {At{"node-2"}}, 0, "t", 1 * kHour, -1});
  EXPECT_EQ(Names(Victims(Ask(Submit("j", 2, 8, 10)))), (std::vector<std::string>{"pair"}));
}

TEST_F(LowestPriority, SameGuardsAsBerth) {
  Make("2x8:H100");
  Start({"young", {At{"node-0"}}, 0, "t", 10 * kHour - 5 * kMinute, -1});  // < 600 s
  Start({"peer", {At{"node-1"}}, 10, "t", 0, -1});                         // same priority
  EXPECT_FALSE(Ask(Submit("j", 1, 8, 10)).has_value());
  clock_.Advance(6 * kMinute);
  EXPECT_EQ(Names(Victims(Ask(Submit("k", 1, 8, 10)))), (std::vector<std::string>{"young"}));
}

TEST_F(LowestPriority, ThroughTheScheduler) {
  Make("4x8:H100/leaf=2");
  for (int n = 0; n < 4; ++n) Start({"n" + std::to_string(n), {At{"node-" + std::to_string(n)}}, n, "t", 0, -1});
  JobId j = Submit("j", 2, 8, 10);
  ASSERT_EQ(sched_->Schedule(), (std::vector<JobId>{j})) << sched_->Find(j)->last_verdict.reason;
  EXPECT_EQ(Names(sched_->preempted_in_last_pass()), (std::vector<std::string>{"n0", "n1"}));
}

}  // namespace
}  // namespace berth::plugins::preempt
