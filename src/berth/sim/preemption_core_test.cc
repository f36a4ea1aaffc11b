// The scheduler's preemption path, with a minimal post-filter plugin defined
// here (evict every running job of lower priority): victims are evicted whole,
// keep the work saved by their last checkpoint, are charged the rest as lost
// GPU-seconds, rejoin the queue after the pass, and the preemptor starts in the
// same pass with the grace period as its startup delay. The queue ledger
// follows every start and eviction.
#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"
#include "berth/plugins/builtin.h"
#include "berth/scheduler/scheduler.h"

namespace berth::sim {
namespace {

using job::JobState;

class EvictLower : public framework::PostFilterPlugin {
 public:
  std::string_view Name() const override { return "evict-lower"; }
  std::optional<framework::PreemptionPlan> PostFilter(const framework::PreemptContext& ctx) override {
    framework::PreemptionPlan plan;
    for (const auto& r : ctx.view.running) {
      if (r.spec->priority >= ctx.job.priority) continue;
      plan.victims.push_back(r.spec->id);
      plan.lost_gpu_seconds += r.LostGpuSeconds(ctx.view.now);
    }
    if (plan.victims.empty()) return std::nullopt;
    std::sort(plan.victims.begin(), plan.victims.end());
    plan.reason = "lower priority";
    return plan;
  }
};

job::JobSpec Job(int64_t id, int32_t gpus, int32_t priority, std::string tenant) {
  job::JobSpec j;
  j.id = JobId(id);
  j.name = "j" + std::to_string(id);
  j.tenant = std::move(tenant);
  j.priority = priority;
  j.duration = SecondsToUs(10'000);
  j.checkpoint_interval = SecondsToUs(600);
  job::TaskGroup g;
  g.gpus = gpus;
  j.groups.push_back(g);
  return j;
}

class PreemptionCore : public ::testing::Test {
 protected:
  void SetUp() override {
    framework::PluginRegistry plugins;
    ASSERT_TRUE(plugins::RegisterBuiltinPlugins(plugins).ok());
    ASSERT_TRUE(plugins
                    .Register("evict-lower",
                              [](const framework::PluginArgs&) -> StatusOr<std::unique_ptr<framework::Plugin>> {
                                return std::unique_ptr<framework::Plugin>(new EvictLower());
                              })
                    .ok());
    framework::PolicyRegistry policies;
    ASSERT_TRUE(plugins::RegisterBuiltinPolicies(policies).ok());
    auto c = cluster::ParseClusterSpec("1x8:H100");
    ASSERT_TRUE(c.ok());
    cluster_ = std::make_unique<cluster::Cluster>(std::move(c).value());
    framework::Profile p = *policies.Find("priority");
    p.post_filter = {framework::PluginRef{"evict-lower"}};
    auto fw = framework::Framework::Create(p, plugins);
    ASSERT_TRUE(fw.ok()) << fw.status().ToString();
    scheduler::SchedulerOptions o;
    o.check_indexes = true;
    o.preemption_grace = SecondsToUs(30);
    o.restore_cost = SecondsToUs(60);
    sched_ = std::make_unique<scheduler::Scheduler>(*cluster_, std::move(fw).value(), o, clock_);
  }

  ManualClock clock_{0};
  std::unique_ptr<cluster::Cluster> cluster_;
  std::unique_ptr<scheduler::Scheduler> sched_;
};

TEST_F(PreemptionCore, VictimsKeepCheckpointedWorkAndRequeueAfterThePass) {
  ASSERT_TRUE(sched_->Submit(Job(1, 4, 0, "a")).ok());
  ASSERT_TRUE(sched_->Submit(Job(2, 4, 0, "b")).ok());
  ASSERT_EQ(sched_->Schedule().size(), 2u);
  const int32_t qa = sched_->Find(JobId(1))->queue;
  EXPECT_EQ(sched_->ledger().usage(qa, sched_->ledger().all_types_dim()), 4000);
  EXPECT_EQ(sched_->running_jobs().size(), 2u);

  clock_.Set(SecondsToUs(1500));  // 2 checkpoints (600, 1200) done; 300 s since the last
  ASSERT_TRUE(sched_->Submit(Job(3, 8, 10, "c")).ok());
  std::vector<JobId> started = sched_->Schedule();
  ASSERT_EQ(started, std::vector<JobId>{JobId(3)});
  EXPECT_EQ(sched_->preempted_in_last_pass().size(), 2u);
  const scheduler::JobRecord* v = sched_->Find(JobId(1));
  EXPECT_EQ(v->state, JobState::kPending);
  EXPECT_EQ(v->work_done, SecondsToUs(1200));
  EXPECT_DOUBLE_EQ(v->lost_gpu_seconds, 4 * 300.0);
  EXPECT_EQ(v->preemptions, 1);
  EXPECT_EQ(v->preempted_by, JobId(3));
  EXPECT_EQ(v->startup_delay, SecondsToUs(60));     // restore on its next run
  EXPECT_DOUBLE_EQ(v->attained_gpu_seconds, 4 * 1500.0);
  EXPECT_EQ(sched_->Find(JobId(3))->startup_delay, SecondsToUs(30));  // waits for the grace period
  EXPECT_EQ(sched_->pending_count(), 2u);
  EXPECT_EQ(sched_->ledger().usage(qa, sched_->ledger().all_types_dim()), 0);
  EXPECT_TRUE(sched_->ledger().CheckConsistency().ok());

  // The victims cannot evict their preemptor back (lower priority) and wait.
  EXPECT_TRUE(sched_->Schedule().empty());
  ASSERT_TRUE(sched_->Finish(JobId(3), JobState::kSucceeded).ok());
  EXPECT_EQ(sched_->Schedule().size(), 2u);
  const scheduler::JobRecord* again = sched_->Find(JobId(1));
  ASSERT_EQ(again->state, JobState::kRunning);
  // The second run's work starts after the restore; a checkpoint 600 s later counts from there.
  ASSERT_FALSE(sched_->running_jobs().empty());
  for (const auto& r : sched_->running_jobs()) {
    EXPECT_EQ(r.run_start, r.start_time + SecondsToUs(60));
    EXPECT_EQ(r.work_done, SecondsToUs(1200));
  }
}

TEST_F(PreemptionCore, NoPlanLeavesTheJobPendingWithItsVerdict) {
  ASSERT_TRUE(sched_->Submit(Job(1, 8, 10, "a")).ok());
  ASSERT_EQ(sched_->Schedule().size(), 1u);
  ASSERT_TRUE(sched_->Submit(Job(2, 4, 5, "b")).ok());
  EXPECT_TRUE(sched_->Schedule().empty());
  EXPECT_TRUE(sched_->preempted_in_last_pass().empty());
  EXPECT_EQ(sched_->Find(JobId(2))->state, JobState::kPending);
  EXPECT_NE(sched_->Find(JobId(2))->last_verdict.reason, "");
}

}  // namespace
}  // namespace berth::sim
