// When a guard expires: the preemption plugins' NextGuardExpiry (the next
// running job to pass min_runtime_s; best-effort work has no guard) and the
// scheduler's query over it (Scheduler::NextGuardExpiry), which answers only
// while a service replica waits, so that drivers run a pass the moment the
// replica may evict the job it waits for.
#include <gtest/gtest.h>

#include "berth/plugins/preempt/preempt_test_util.h"

namespace berth::plugins::preempt::testing {
namespace {

constexpr TimeUs kGuard = 10 * kMinute;

TimeUs PluginExpiry(const PreemptHarness& h) {
  return h.sched_->framework().post_filter().front()->NextGuardExpiry(h.View());
}

TEST(GuardExpiry, TheNextRunningJobToPassTheGuard) {
  for (const char* policy : {"priority-preempt", "priority-preempt-lpf"}) {
    SCOPED_TRACE(policy);
    PreemptHarness h;
    h.Build("2x8:H100", policy, {}, kGuard);
    h.Start({"a", {At{"node-0"}}, 0, "t", 0});
    h.Start({"b", {At{"node-1", 4, 0}}, 0, "t", 100 * kUsPerSecond});
    h.Start({"be", {At{"node-1", 4, 4}}, 0, "t", 50 * kUsPerSecond, -1, /*best_effort=*/true});
    EXPECT_EQ(PluginExpiry(h), kGuard);
    h.clock_.Set(kGuard);  // a passes it now: b is next (best effort is never shielded)
    EXPECT_EQ(PluginExpiry(h), kGuard + 100 * kUsPerSecond);
    h.clock_.Set(kGuard + 100 * kUsPerSecond);
    EXPECT_EQ(PluginExpiry(h), -1);
  }
}

TEST(GuardExpiry, NoGuardNoExpiry) {
  PreemptHarness h;
  h.Build("1x8:H100", "priority-preempt", {}, 0);
  h.Start({"a", {At{"node-0"}}, 0, "t", 0});
  EXPECT_EQ(PluginExpiry(h), -1);
}

job::JobSpec Replica(int64_t id, int32_t priority) {
  job::JobSpec j;
  j.id = JobId(id);
  j.name = "r" + std::to_string(id);
  j.tenant = "t";
  j.priority = priority;
  j.replica_of = JobId(1000);
  j.service = job::ServiceSpec{};
  job::TaskGroup g;
  g.gpus = 1;
  j.groups.push_back(g);
  return j;
}

// A replica blocked only by the guard of the job it would evict: the
// scheduler names the moment the guard expires, and a pass then evicts.
TEST(GuardExpiry, SchedulerWakesAWaitingReplicaWhenItsVictimsGuardExpires) {
  PreemptHarness h;
  h.Build("1x8:H100", "priority-preempt", {}, kGuard);
  const JobId train = h.Start({"train", {At{"node-0"}}, 0, "t", 0});
  EXPECT_EQ(h.sched_->NextGuardExpiry(0), -1);  // nothing waits
  h.clock_.Set(100 * kUsPerSecond);
  h.Submit("batch", 1, 1, 5);
  EXPECT_TRUE(h.sched_->Schedule().empty());
  EXPECT_EQ(h.sched_->NextGuardExpiry(h.clock_.Now()), -1);  // a batch job waits for the next event
  ASSERT_TRUE(h.sched_->Submit(Replica(50, 10)).ok());
  EXPECT_TRUE(h.sched_->Schedule().empty());
  EXPECT_EQ(h.sched_->NextGuardExpiry(h.clock_.Now()), kGuard);
  h.clock_.Set(kGuard - 1);
  EXPECT_TRUE(h.sched_->Schedule().empty());
  EXPECT_EQ(h.sched_->NextGuardExpiry(h.clock_.Now()), kGuard);
  h.clock_.Set(kGuard);
  const std::vector<JobId> started = h.sched_->Schedule();
  ASSERT_FALSE(started.empty());
  EXPECT_EQ(started.front(), JobId(50));
  EXPECT_EQ(h.State(train), job::JobState::kPending);  // evicted, requeued
  EXPECT_EQ(h.sched_->NextGuardExpiry(h.clock_.Now()), -1);  // no replica waits
}

// A policy without a time guard never names a time, replica or not.
TEST(GuardExpiry, PolicyWithoutAGuard) {
  PreemptHarness h;
  h.Build("1x8:H100", "priority-preempt", {}, 0);
  h.Start({"train", {At{"node-0"}}, 0, "t", 0});
  ASSERT_TRUE(h.sched_->Submit(Replica(50, -1)).ok());  // below train: no victim
  EXPECT_TRUE(h.sched_->Schedule().empty());
  EXPECT_EQ(h.sched_->NextGuardExpiry(h.clock_.Now()), -1);
}

}  // namespace
}  // namespace berth::plugins::preempt::testing
