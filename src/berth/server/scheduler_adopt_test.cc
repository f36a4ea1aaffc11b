// The two scheduler additions the service relies on: Adopt (re-applying
// placements recovered from the store) and per-filter reject counts in
// verdicts ("why is my job pending"). Kept with the server tests because they
// need the built-in plugins, which the scheduler module does not link.
#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"
#include "berth/plugins/builtin.h"
#include "berth/scheduler/scheduler.h"

namespace berth::scheduler {
namespace {

class AdoptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = cluster::ParseClusterSpec("2x8:H100").value();
    framework::PluginRegistry plugins;
    ASSERT_TRUE(plugins::RegisterBuiltinPlugins(plugins).ok());
    framework::PolicyRegistry policies;
    ASSERT_TRUE(plugins::RegisterBuiltinPolicies(policies).ok());
    auto fw = framework::Framework::Create(policies.Find("bestfit").value(), plugins).value();
    SchedulerOptions o;
    o.check_indexes = true;
    sched_ = std::make_unique<Scheduler>(cluster_, std::move(fw), o, clock_);
  }
  job::JobSpec Job(int64_t id, int32_t count, int32_t gpus) {
    job::JobSpec j;
    j.id = JobId(id);
    j.name = "j" + std::to_string(id);
    j.groups.push_back({.count = count, .gpus = gpus});
    return j;
  }
  framework::TaskPlacement On(int64_t job, int32_t task, int32_t node, uint64_t mask) {
    framework::TaskPlacement p;
    p.task = TaskKey{JobId(job), task};
    p.alloc.node = NodeId(node);
    p.alloc.gpu_mask = mask;
    p.alloc.milli_per_gpu = kMilliPerGpu;
    return p;
  }

  cluster::Cluster cluster_;
  ManualClock clock_{1000};
  std::unique_ptr<Scheduler> sched_;
};

TEST_F(AdoptTest, AppliesRecordedPlacementsAllOrNothing) {
  ASSERT_TRUE(sched_->Submit(Job(1, 2, 4)).ok());
  std::vector<framework::TaskPlacement> p = {On(1, 0, 1, 0x0f), On(1, 1, 1, 0xf0)};
  ASSERT_TRUE(sched_->Adopt(JobId(1), p, 500).ok());
  const JobRecord* r = sched_->Find(JobId(1));
  EXPECT_EQ(r->state, job::JobState::kRunning);
  EXPECT_EQ(r->start_time, 500);
  EXPECT_EQ(sched_->pending_count(), 0u);
  EXPECT_EQ(sched_->running_count(), 1u);
  EXPECT_EQ(sched_->state().full_free_gpus(NodeId(1)), 0);
  // A second job whose recorded placement collides changes nothing.
  ASSERT_TRUE(sched_->Submit(Job(2, 2, 4)).ok());
  std::vector<framework::TaskPlacement> clash = {On(2, 0, 0, 0x0f), On(2, 1, 1, 0x0f)};
  EXPECT_FALSE(sched_->Adopt(JobId(2), clash, 600).ok());
  EXPECT_EQ(sched_->Find(JobId(2))->state, job::JobState::kPending);
  EXPECT_EQ(sched_->state().full_free_gpus(NodeId(0)), 8);
  EXPECT_TRUE(sched_->state().CheckIndexes().ok());
  // Not pending, not this job's task, unknown job.
  EXPECT_EQ(sched_->Adopt(JobId(1), p, 0).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(sched_->Adopt(JobId(2), std::vector{On(1, 0, 0, 1)}, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sched_->Adopt(JobId(9), p, 0).code(), StatusCode::kNotFound);
  // The adopted job finishes like any other.
  ASSERT_TRUE(sched_->Finish(JobId(1), job::JobState::kSucceeded).ok());
  EXPECT_EQ(sched_->state().full_free_gpus(NodeId(1)), 8);
}

TEST_F(AdoptTest, VerdictCountsRejectionsPerFilter) {
  job::JobSpec hog = Job(1, 2, 5);  // 5 GPUs and most CPU of each node
  hog.groups[0].cpu_milli = 100000;
  ASSERT_TRUE(sched_->Submit(hog).ok());
  sched_->Schedule();
  job::JobSpec small = Job(2, 1, 1);  // GPUs are free, CPU is not
  small.groups[0].cpu_milli = 50000;
  ASSERT_TRUE(sched_->Submit(small).ok());
  ASSERT_TRUE(sched_->SetNodeUp(NodeId(0), false).ok());
  sched_->Schedule();
  const framework::Verdict& v = sched_->Find(JobId(2))->last_verdict;
  EXPECT_EQ(v.code, framework::VerdictCode::kUnschedulable);
  ASSERT_EQ(v.rejects.size(), 2u) << v.reason;
  EXPECT_EQ(v.rejects[0].nodes, 1);  // the fit filter: node 1
  EXPECT_EQ(v.rejects[1].reason, "down");
  EXPECT_EQ(v.rejects[1].nodes, 1);
}

TEST_F(AdoptTest, ReleaseTaskFreesOneTaskAndTheLastEndsTheJob) {
  ASSERT_TRUE(sched_->Submit(Job(1, 2, 4)).ok());
  std::vector<framework::TaskPlacement> p = {On(1, 0, 0, 0x0f), On(1, 1, 1, 0x0f)};
  ASSERT_TRUE(sched_->Adopt(JobId(1), p, 500).ok());
  // One member ends: its GPUs are free, the job keeps running on the other.
  ASSERT_TRUE(sched_->ReleaseTask(JobId(1), 0, job::JobState::kSucceeded).ok());
  EXPECT_EQ(sched_->state().full_free_gpus(NodeId(0)), 8);
  EXPECT_EQ(sched_->state().full_free_gpus(NodeId(1)), 4);
  const JobRecord* r = sched_->Find(JobId(1));
  EXPECT_EQ(r->state, job::JobState::kRunning);
  ASSERT_EQ(r->placements.size(), 1u);
  ASSERT_EQ(sched_->running_jobs().size(), 1u);
  EXPECT_EQ(sched_->running_jobs()[0].milli_gpu, 4 * kMilliPerGpu);
  EXPECT_EQ(sched_->running_jobs()[0].placements.size(), 1u);
  // A task that holds nothing, and a non-terminal state, are refused.
  EXPECT_EQ(sched_->ReleaseTask(JobId(1), 0, job::JobState::kSucceeded).code(), StatusCode::kNotFound);
  EXPECT_EQ(sched_->ReleaseTask(JobId(1), 1, job::JobState::kRunning).code(), StatusCode::kInvalidArgument);
  // The last one ends the job with the state given.
  ASSERT_TRUE(sched_->ReleaseTask(JobId(1), 1, job::JobState::kFailed).ok());
  EXPECT_EQ(sched_->Find(JobId(1))->state, job::JobState::kFailed);
  EXPECT_EQ(sched_->running_count(), 0u);
  EXPECT_EQ(sched_->state().allocated_milli(), 0);
  EXPECT_EQ(sched_->ReleaseTask(JobId(1), 1, job::JobState::kFailed).code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace berth::scheduler
