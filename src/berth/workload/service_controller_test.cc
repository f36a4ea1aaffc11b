// Services through the scheduler: replicas as jobs, scaling with the load,
// spread over failure domains, rolling updates that keep the minimum
// available, and a service taking its capacity back from best-effort work.
#include "berth/workload/service_controller.h"

#include <gtest/gtest.h>

#include <set>

#include "berth/workload/service_test_util.h"

namespace berth::workload {
namespace {

using testing::ServiceHarness;
constexpr TimeUs kS = kUsPerSecond;

TEST(Services, StartsItsReplicasAsJobs) {
  ServiceHarness h;
  h.Build("2x8:H100");
  const JobId s = h.AddService(ServiceHarness::Service("chat", 3, 1, 8));
  h.Step();
  auto st = h.ctl_->Find(s);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->running, 3);
  EXPECT_EQ(st->desired, 3);
  for (JobId r : st->replicas) {
    EXPECT_EQ(h.ctl_->ServiceOf(r), s);
    EXPECT_EQ(h.sched_->Find(r)->spec.replica_of, s);
    EXPECT_EQ(h.sched_->Find(r)->spec.num_tasks(), 1);
  }
  EXPECT_TRUE(h.sched_->state().CheckIndexes().ok());
}

TEST(Services, ScaleWithTheLoad) {
  ServiceHarness h;
  AutoscalerOptions o;
  o.down_stabilization = 60 * kS;
  h.Build("2x8:H100", "bestfit", o);
  auto spec = ServiceHarness::Service("chat", 1, 1, 10);
  spec.service->target_milli_rps = 10'000;
  const JobId s = h.AddService(spec);
  h.Step();
  ASSERT_TRUE(h.ctl_->ReportLoad(s, 55'000, h.clock_.Now()).ok());
  h.Step();
  EXPECT_EQ(h.Running(s), 1);  // the next evaluation is one period on
  h.Advance(15 * kS);
  h.Step();
  EXPECT_EQ(h.Running(s), 5);  // 1 + max(4 pods, 100%) per period: 5 of the 6 wanted
  h.Advance(15 * kS);
  h.Step();
  EXPECT_EQ(h.Running(s), 6);
  ASSERT_TRUE(h.ctl_->ReportLoad(s, 12'000, h.clock_.Now()).ok());
  h.Advance(15 * kS);
  h.Step();
  EXPECT_EQ(h.Running(s), 6);  // within the down window
  h.Advance(61 * kS);
  h.Step();
  EXPECT_EQ(h.Running(s), 2);
  EXPECT_EQ(h.ctl_->ReportLoad(JobId(999), 1, 0).code(), StatusCode::kNotFound);
}

TEST(Services, ReplicasSpreadOverNodesAndLeaves) {
  ServiceHarness h;
  h.Build("8x8:H100/leaf=4");  // two leaves of four nodes
  auto spec = ServiceHarness::Service("api", 6, 6, 6);
  spec.service->max_per_node = 1;
  spec.service->max_per_leaf = 3;
  const JobId s = h.AddService(spec);
  h.Step();
  auto st = h.ctl_->Find(s);
  ASSERT_EQ(st->running, 6);
  std::set<int32_t> nodes;
  int32_t per_leaf[2] = {0, 0};
  for (JobId r : st->replicas) {
    const NodeId n = h.sched_->Find(r)->placements[0].alloc.node;
    EXPECT_TRUE(nodes.insert(n.value()).second) << "two replicas on node " << n.value();
    ++per_leaf[n.value() / 4];
  }
  EXPECT_EQ(per_leaf[0], 3);
  EXPECT_EQ(per_leaf[1], 3);
  // A seventh replica has no node left within the limits: it waits, and says why.
  ASSERT_TRUE(h.ctl_->Update(s, spec.groups[0], 0).ok());  // (a rollout: surge one)
  h.Step();
  const auto after = h.ctl_->Find(s);
  EXPECT_EQ(after->running, 6);
  bool waiting = false;
  for (JobId r : after->replicas) {
    const auto* rec = h.sched_->Find(r);
    if (rec->state == job::JobState::kPending) {
      waiting = true;
      EXPECT_NE(rec->last_verdict.reason.find("spread"), std::string::npos) << rec->last_verdict.reason;
    }
  }
  EXPECT_TRUE(waiting);
}

TEST(Services, RollingUpdateKeepsTheMinimumAvailable) {
  ServiceHarness h;
  h.Build("1x8:H100");
  auto spec = ServiceHarness::Service("chat", 4, 3, 4);
  const JobId s = h.AddService(spec);
  h.Step();
  ASSERT_EQ(h.Running(s), 4);
  // Room for the surge: 4 GPUs free. New shape: half a GPU per replica.
  job::TaskGroup shape = spec.groups[0];
  shape.milli_per_gpu = 500;
  ASSERT_TRUE(h.ctl_->Update(s, shape, 0).ok());
  const int32_t fewest = h.Step(s);
  EXPECT_GE(fewest, 3);
  auto st = h.ctl_->Find(s);
  EXPECT_FALSE(st->rolling);
  EXPECT_EQ(st->running, 4);
  EXPECT_EQ(st->updated, 4);
  EXPECT_EQ(st->version, 1);
  for (JobId r : st->replicas) EXPECT_EQ(h.sched_->Find(r)->spec.groups[0].milli_per_gpu, 500);
}

TEST(Services, RollingUpdateOnAFullClusterStillKeepsTheMinimum) {
  ServiceHarness h;
  h.Build("1x4:H100");
  auto spec = ServiceHarness::Service("chat", 4, 3, 4);
  const JobId s = h.AddService(spec);
  h.Step();
  ASSERT_EQ(h.Running(s), 4);  // no room for a surge
  job::TaskGroup shape = spec.groups[0];
  shape.cpu_milli = 1000;
  ASSERT_TRUE(h.ctl_->Update(s, shape, 0).ok());
  const int32_t fewest = h.Step(s);
  EXPECT_EQ(fewest, 3);  // one at a time, never fewer than min_replicas
  EXPECT_EQ(h.ctl_->Find(s)->updated, 4);
}

TEST(Services, ReclaimCapacityFromBestEffortWithinTheGrace) {
  ServiceHarness h;
  h.Build("2x8:H100", "priority-preempt", {}, /*grace=*/30 * kS, /*min_runtime_s=*/"0");
  h.SubmitBatch("be-0", 8);
  h.SubmitBatch("be-1", 8);
  h.sched_->Schedule();
  ASSERT_EQ(h.sched_->running_count(), 2u);  // best-effort work fills the cluster
  h.Advance(600 * kS);
  auto spec = ServiceHarness::Service("chat", 2, 2, 4, /*gpus=*/2);
  spec.service->latency_class = job::LatencyClass::kCritical;
  const JobId s = h.AddService(spec);
  h.Step();
  auto st = h.ctl_->Find(s);
  EXPECT_EQ(st->running, 2);
  // One best-effort job yielded (the least lost work: both checkpoint every
  // minute); the replicas work after the grace, the bound for best effort.
  int preempted = 0;
  for (JobId id : {JobId(1), JobId(2)}) preempted += h.sched_->Find(id)->preemptions;
  EXPECT_EQ(preempted, 1);
  // The replica whose placement evicted it works after the grace; the other
  // took the rest of the freed node. No replica waits longer than the bound.
  TimeUs longest = 0;
  for (JobId r : st->replicas) longest = std::max(longest, h.sched_->Find(r)->startup_delay);
  EXPECT_EQ(longest, 30 * kS);
}

TEST(Services, RemoveStopsEveryReplica) {
  ServiceHarness h;
  h.Build("1x8:H100");
  const JobId s = h.AddService(ServiceHarness::Service("chat", 3, 1, 3));
  h.Step();
  ASSERT_TRUE(h.ctl_->Remove(s).ok());
  h.Step();
  EXPECT_FALSE(h.ctl_->Has(s));
  EXPECT_EQ(h.sched_->running_count(), 0u);
}

TEST(Services, BadSpecsAreRejected) {
  ServiceHarness h;
  h.Build("1x8:H100");
  auto spec = ServiceHarness::Service("x", 5, 1, 3);
  spec.id = JobId(100);
  EXPECT_NE(h.ctl_->Add(spec, 0).message().find("replicas 5 is outside"), std::string::npos);
  spec = ServiceHarness::Service("x", 1, 1, 3);
  spec.id = JobId(101);
  spec.groups[0].count = 2;
  EXPECT_FALSE(h.ctl_->Add(spec, 0).ok());
}

}  // namespace
}  // namespace berth::workload
