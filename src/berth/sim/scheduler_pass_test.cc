// The scheduler's pass over a long queue, with the built-in policies: jobs the
// free-GPU counters cannot hold are rejected without a full placement attempt,
// jobs that can never fit still fail as Unresolvable, and a pass over a queue
// that cannot start anything stops early; the records of ended jobs can be
// dropped (Forget) without changing what later passes decide.
#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"
#include "berth/plugins/builtin.h"
#include "berth/scheduler/scheduler.h"

namespace berth::sim {
namespace {

using job::JobState;

job::JobSpec Job(int64_t id, int32_t gpus, int32_t tasks = 1, MilliCpu cpu = 1000) {
  job::JobSpec j;
  j.id = JobId(id);
  j.name = "j" + std::to_string(id);
  j.duration = SecondsToUs(10);
  job::TaskGroup g;
  g.count = tasks;
  g.gpus = gpus;
  g.cpu_milli = cpu;
  j.groups.push_back(g);
  return j;
}

class SchedulerPass : public ::testing::Test {
 protected:
  void Make(const std::string& spec, const std::string& policy) {
    framework::PluginRegistry plugins;
    ASSERT_TRUE(plugins::RegisterBuiltinPlugins(plugins).ok());
    framework::PolicyRegistry policies;
    ASSERT_TRUE(plugins::RegisterBuiltinPolicies(policies).ok());
    auto c = cluster::ParseClusterSpec(spec);
    ASSERT_TRUE(c.ok());
    cluster_ = std::make_unique<cluster::Cluster>(std::move(c).value());
    auto fw = framework::Framework::Create(*policies.Find(policy), plugins);
    ASSERT_TRUE(fw.ok());
    scheduler::SchedulerOptions o;
    o.check_indexes = true;
    sched_ = std::make_unique<scheduler::Scheduler>(*cluster_, std::move(fw).value(), o, clock_);
  }

  ManualClock clock_;
  std::unique_ptr<cluster::Cluster> cluster_;
  std::unique_ptr<scheduler::Scheduler> sched_;
};

// Two nodes of 4 GPUs and 64 cores; a gang of two 40-core tasks leaves 3 free
// GPUs on each node. 6 GPUs are free, but no node holds a 4-GPU task: the
// first pass tries it in full (the filter says why); later passes see from the
// counters that nothing changed for the better and keep that verdict.
TEST_F(SchedulerPass, FragmentedFreeGpusSkipRepeatedAttempts) {
  Make("2x4:V100", "sjf");
  ASSERT_TRUE(sched_->Submit(Job(0, 1, /*tasks=*/2, /*cpu=*/40'000)).ok());
  ASSERT_EQ(sched_->Schedule().size(), 1u);
  ASSERT_EQ(sched_->state().free_full_gpus_total(), 6);
  ASSERT_TRUE(sched_->Submit(Job(1, 4)).ok());
  ASSERT_TRUE(sched_->Submit(Job(2, 1)).ok());
  EXPECT_EQ(sched_->Schedule().size(), 1u);  // job 2
  const scheduler::JobRecord* r1 = sched_->Find(JobId(1));
  EXPECT_EQ(r1->state, JobState::kPending);
  EXPECT_EQ(r1->attempts, 1);
  EXPECT_EQ(r1->last_verdict.code, framework::VerdictCode::kUnschedulable);
  EXPECT_EQ(r1->last_verdict.plugin, "filter");
  const std::string reason = r1->last_verdict.reason;
  EXPECT_NE(reason.find("0/2 nodes fit"), std::string::npos) << reason;
  ASSERT_TRUE(sched_->Submit(Job(3, 1)).ok());
  EXPECT_EQ(sched_->Schedule().size(), 1u);  // job 3; job 1 skipped
  EXPECT_EQ(r1->attempts, 1);
  EXPECT_EQ(r1->last_verdict.reason, reason);
  // Job 0's gang leaves: node by node the 4-GPU task fits again.
  ASSERT_TRUE(sched_->Finish(JobId(0), JobState::kSucceeded).ok());
  EXPECT_EQ(sched_->Schedule().size(), 1u);
  EXPECT_EQ(r1->state, JobState::kRunning);
  EXPECT_EQ(r1->attempts, 2);
}

// Fewer free GPUs than a job needs: the capacity verdict says so, without a
// full attempt.
TEST_F(SchedulerPass, CapacityVerdictWithoutAFullAttempt) {
  Make("1x8:V100", "bestfit");
  ASSERT_TRUE(sched_->Submit(Job(0, 6)).ok());
  ASSERT_TRUE(sched_->Submit(Job(1, 4)).ok());
  ASSERT_TRUE(sched_->Submit(Job(2, 2)).ok());
  EXPECT_EQ(sched_->Schedule().size(), 2u);  // jobs 0 and 2
  const scheduler::JobRecord* r = sched_->Find(JobId(1));
  EXPECT_EQ(r->attempts, 0);
  EXPECT_EQ(r->last_verdict.plugin, "capacity");
  EXPECT_EQ(r->last_verdict.reason, "needs 4 GPUs, 2 free");
}

// A task larger than any node fails at once as Unresolvable, even while the
// cluster is too busy for its GPU count.
TEST_F(SchedulerPass, NeverFitFailsEvenWhenTheClusterIsFull) {
  Make("1x4:V100", "sjf");
  ASSERT_TRUE(sched_->Submit(Job(0, 4)).ok());
  ASSERT_EQ(sched_->Schedule().size(), 1u);
  ASSERT_TRUE(sched_->Submit(Job(1, 8)).ok());
  EXPECT_TRUE(sched_->Schedule().empty());
  const scheduler::JobRecord* r = sched_->Find(JobId(1));
  EXPECT_EQ(r->state, JobState::kFailed);
  EXPECT_EQ(r->last_verdict.code, framework::VerdictCode::kUnresolvable);
  EXPECT_EQ(sched_->pending_count(), 0u);
}

// A full GPU and a long queue of GPU jobs: the pass stops at once; the jobs a
// full pass would have reached get their capacity verdicts (all new jobs, or
// only the head under strict FIFO). When the GPU frees up, the queue decides.
TEST_F(SchedulerPass, FullClusterLongQueue) {
  for (const char* policy : {"fifo", "sjf", "bestfit"}) {
    Make("1x1:V100", policy);
    ASSERT_TRUE(sched_->Submit(Job(0, 1)).ok());
    ASSERT_EQ(sched_->Schedule().size(), 1u);
    for (int i = 1; i <= 1000; ++i) ASSERT_TRUE(sched_->Submit(Job(i, 1)).ok());
    EXPECT_TRUE(sched_->Schedule().empty()) << policy;
    EXPECT_EQ(sched_->pending_count(), 1000u) << policy;
    const bool strict = std::string(policy) == "fifo";
    for (int i = 1; i <= 1000; ++i) {
      const auto& v = sched_->Find(JobId(i))->last_verdict;
      if (i == 1 || !strict) {
        EXPECT_EQ(v.reason, "needs 1 GPUs, 0 free") << policy << " job " << i;
      } else {
        EXPECT_TRUE(v.ok()) << policy << " job " << i << ": not reached under strict FIFO";
      }
    }
    ASSERT_TRUE(sched_->Finish(JobId(0), JobState::kSucceeded).ok());
    auto started = sched_->Schedule();
    ASSERT_EQ(started.size(), 1u) << policy;
    EXPECT_EQ(started[0], JobId(1)) << policy;
    EXPECT_EQ(sched_->pending_count(), 999u) << policy;
  }
}

// A CPU-only job behind GPU jobs is still reached when no GPU is free.
TEST_F(SchedulerPass, CpuJobsAreNotSkipped) {
  Make("1x1:V100", "bestfit");
  ASSERT_TRUE(sched_->Submit(Job(0, 1)).ok());
  ASSERT_TRUE(sched_->Submit(Job(1, 1)).ok());
  ASSERT_TRUE(sched_->Submit(Job(2, 0)).ok());
  auto started = sched_->Schedule();
  ASSERT_EQ(started.size(), 2u);
  EXPECT_EQ(started[1], JobId(2));
  EXPECT_EQ(sched_->Find(JobId(1))->state, JobState::kPending);
}

// A time budget splits a pass: each slice visits jobs until the budget says
// stop, the next pass continues there, and every job is placed exactly once,
// in the order one unbudgeted pass would place them.
TEST_F(SchedulerPass, BudgetSplitsAPassAndTheNextContinues) {
  Make("4x8:V100", "fifo");
  for (int64_t id = 0; id < 10; ++id) ASSERT_TRUE(sched_->Submit(Job(id, 1)).ok());
  int visits = 0;
  auto budget = [&] { return ++visits % 3 == 0; };  // two more jobs per slice, then stop
  std::vector<JobId> order;
  int passes = 0;
  do {
    for (JobId j : sched_->Schedule(budget)) order.push_back(j);
    ++passes;
  } while (sched_->last_pass_split() && passes < 20);
  EXPECT_FALSE(sched_->last_pass_split());
  EXPECT_GT(passes, 2);
  ASSERT_EQ(order.size(), 10u);
  for (int64_t id = 0; id < 10; ++id) EXPECT_EQ(order[id], JobId(id));
  EXPECT_TRUE(sched_->state().CheckIndexes().ok());
}

// Forget drops the record of an ended job only; its slot goes to the next
// job, which is placed as it would have been, and default ids keep counting.
TEST_F(SchedulerPass, ForgetDropsOnlyEndedJobsAndTheirSlotIsReused) {
  Make("1x4:V100", "fifo");
  ASSERT_TRUE(sched_->Submit(Job(0, 4)).ok());
  ASSERT_TRUE(sched_->Submit(Job(1, 4)).ok());
  EXPECT_EQ(sched_->Forget(JobId(1)).code(), StatusCode::kFailedPrecondition);  // pending
  ASSERT_EQ(sched_->Schedule().size(), 1u);
  EXPECT_EQ(sched_->Forget(JobId(0)).code(), StatusCode::kFailedPrecondition);  // running
  EXPECT_EQ(sched_->Forget(JobId(7)).code(), StatusCode::kNotFound);
  ASSERT_TRUE(sched_->Finish(JobId(0), JobState::kSucceeded).ok());
  ASSERT_TRUE(sched_->Forget(JobId(0)).ok());
  EXPECT_EQ(sched_->Find(JobId(0)), nullptr);
  EXPECT_EQ(sched_->records(), 1u);
  job::JobSpec unnamed = Job(0, 2);
  unnamed.id = JobId();
  ASSERT_TRUE(sched_->Submit(unnamed).ok());  // reuses job 0's slot; its id is the submission count
  EXPECT_EQ(sched_->records(), 2u);
  ASSERT_NE(sched_->Find(JobId(2)), nullptr);
  EXPECT_EQ(sched_->Find(JobId(2))->state, JobState::kPending);
  const std::vector<JobId> started = sched_->Schedule();
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0], JobId(1));  // submitted first: order is by submission, not by slot
  EXPECT_EQ(sched_->Find(JobId(2))->state, JobState::kPending);
}

}  // namespace
}  // namespace berth::sim
