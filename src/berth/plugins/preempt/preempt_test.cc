// The `preempt` post-filter: a minimal, least-cost victim set inside one
// topology domain, the guards, reclaim and queue budgets; and preemption
// through the scheduler with the topology plan and with plain best fit.
#include <gtest/gtest.h>

#include "berth/plugins/preempt/preempt_test_util.h"
#include "berth/plugins/preempt/room.h"

namespace berth::plugins::preempt {
namespace {

using testing::At;
using testing::kHour;
using testing::kMinute;
using testing::PreemptHarness;
using testing::Victims;
using testing::RunSpec;

// Eight single-node jobs on 2 leaves of 4 nodes; the job started at 0 and
// last checkpointed `age` before now (10 h): cost = 8 GPUs x age.
class EightNodes : public PreemptHarness, public ::testing::Test {
 protected:
  void SetUp() override { Build("8x8:H100/leaf=4/spine=2"); }
  JobId Node(int n, TimeUs age, int32_t priority = 0) {
    clock_.Set(10 * kHour);
    // Interval chosen so that the last checkpoint is exactly `age` ago.
    return Start({"n" + std::to_string(n), {At{"node-" + std::to_string(n)}}, priority, "t", 0, 10 * kHour - age});
  }
};

TEST_F(EightNodes, TakesTheCheapestPairThatSharesALeaf) {
  // Leaf 0: 1, 5, 40, 40 min; leaf 1: 2, 3, 40, 40 min. The two cheapest
  // nodes (1 and 2 min) are in different leaves; leaf 1's pair costs 5 < 6.
  const TimeUs ages[] = {1, 5, 40, 40, 2, 3, 40, 40};
  for (int n = 0; n < 8; ++n) Node(n, ages[n] * kMinute);
  JobId j = Submit("big", 2, 8, 10);
  auto plan = Ask(j);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(Names(plan->victims), (std::vector<std::string>{"n4", "n5"}));
  EXPECT_DOUBLE_EQ(plan->lost_gpu_seconds, 8.0 * 5 * 60);
  EXPECT_NE(plan->reason.find("in leaf"), std::string::npos) << plan->reason;
  EXPECT_NE(plan->reason.find("0.67 GPU-h lost"), std::string::npos) << plan->reason;
}

TEST_F(EightNodes, RecentCheckpointBeatsRecentStart) {
  // n0 started 20 min ago and never checkpoints: 8 x 20 min. n1 has run 10 h
  // but checkpointed 2 min ago: 8 x 2 min. The cheap one goes.
  clock_.Set(10 * kHour);
  Start({"n0", {At{"node-0"}}, 0, "t", 10 * kHour - 20 * kMinute, -1});
  Start({"n1", {At{"node-1"}}, 0, "t", 0, 10 * kHour - 2 * kMinute});
  for (int n = 2; n < 8; ++n) Node(n, 30 * kMinute);
  auto plan = Ask(Submit("one", 1, 8, 10));
  EXPECT_EQ(Names(Victims(plan)), (std::vector<std::string>{"n1"}));
}

TEST_F(EightNodes, OnlyLowerPriorityInTheSameQueue) {
  for (int n = 0; n < 8; ++n) Node(n, kMinute * (n + 1), n < 4 ? 10 : 0);
  // Priority 10 may take only the priority-0 nodes (leaf 1).
  auto plan = Ask(Submit("big", 4, 8, 10));
  EXPECT_EQ(Names(Victims(plan)), (std::vector<std::string>{"n4", "n5", "n6", "n7"}));
  // Equal priority: nothing.
  EXPECT_FALSE(Ask(Submit("peer", 1, 8, 0)).has_value());
  // Five nodes in one leaf do not exist: nothing.
  EXPECT_FALSE(Ask(Submit("huge", 5, 8, 10, "t", cluster::Level::kLeaf)).has_value());
}

TEST_F(EightNodes, MinRuntimeGuard) {
  clock_.Set(10 * kHour);
  // n0 is the cheapest but started 5 minutes ago (< 600 s): n1 goes instead.
  Start({"n0", {At{"node-0"}}, 0, "t", 10 * kHour - 5 * kMinute, -1});
  Start({"n1", {At{"node-1"}}, 0, "t", 0, -1});
  for (int n = 2; n < 8; ++n) Start({"x" + std::to_string(n), {At{"node-" + std::to_string(n)}}, 10, "t", 0, -1});
  EXPECT_EQ(Names(Victims(Ask(Submit("j", 1, 8, 5)))), (std::vector<std::string>{"n1"}));
}

TEST_F(EightNodes, UnresolvableVerdictGetsNoPlan) {
  for (int n = 0; n < 8; ++n) Node(n, kMinute);
  JobId j = Submit("j", 1, 8, 10);
  EXPECT_TRUE(Ask(j).has_value());
  EXPECT_FALSE(Ask(j, framework::Verdict::Unresolvable("test", "never")).has_value());
}

TEST_F(EightNodes, SpreadVictimCountsInEveryNodeItFrees) {
  // A 2-node job on nodes 2 and 3 (cost 16 x 3 min = 48) frees two nodes at
  // once; two single-node jobs at 4 min each cost 2 x 8 x 4 = 64.
  clock_.Set(10 * kHour);
  Start({"pair", {At{"node-2"}, At{"node-3"}}, 0, "t", 0, 10 * kHour - 3 * kMinute});
  Node(0, 4 * kMinute);
  Node(1, 4 * kMinute);
  for (int n = 4; n < 8; ++n) Node(n, 30 * kMinute);
  auto plan = Ask(Submit("big", 2, 8, 10));
  EXPECT_EQ(Names(Victims(plan)), (std::vector<std::string>{"pair"}));
}

TEST_F(EightNodes, PrefersTheNarrowestDomain) {
  // A 1-node job: the cheapest single node wins (NVLink level), even if a
  // pair of half-node jobs on another node would be cheaper in sum per GPU.
  clock_.Set(10 * kHour);
  Start({"h0", {At{"node-0", 4, 0}}, 0, "t", 0, 10 * kHour - 1 * kMinute});
  Start({"h1", {At{"node-0", 4, 4}}, 0, "t", 0, 10 * kHour - 1 * kMinute});
  for (int n = 1; n < 8; ++n) Node(n, 3 * kMinute);
  auto plan = Ask(Submit("one", 1, 8, 10));
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(Names(plan->victims), (std::vector<std::string>{"h0", "h1"}));  // 2 x 4 x 1 min < 8 x 3 min
  EXPECT_NE(plan->reason.find("in nvlink"), std::string::npos) << plan->reason;
}

TEST_F(EightNodes, PartialNodesNeedWholeFreeGpusPerNode) {
  // Every node holds two 4-GPU jobs; a 2 x 8 gang needs both halves of two
  // nodes in one leaf, not four halves anywhere.
  clock_.Set(10 * kHour);
  for (int n = 0; n < 8; ++n) {
    const TimeUs a = (n == 0 || n == 5) ? kMinute : 10 * kMinute;
    Start({"a" + std::to_string(n), {At{"node-" + std::to_string(n), 4, 0}}, 0, "t", 0, 10 * kHour - a});
    Start({"b" + std::to_string(n), {At{"node-" + std::to_string(n), 4, 4}}, 0, "t", 0, 10 * kHour - 10 * kMinute});
  }
  auto plan = Ask(Submit("big", 2, 8, 10));
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims.size(), 4u);  // two whole nodes
  EXPECT_DOUBLE_EQ(plan->lost_gpu_seconds, 4.0 * 60 * (1 + 10 + 10 + 10));
}

// GPU memory (gpu_memory_mib): evicting a job on a T4 (16 GB) frees no room
// for a task that needs 40,000 MiB per GPU, however cheap that victim is.
TEST(GpuMemory, OnlyVictimsOnGpusBigEnoughCount) {
  PreemptHarness h;
  h.Build("1x8:T4+1x8:H100");
  const cluster::Cluster& c = *h.cluster_;
  ASSERT_EQ(c.gpu_types()[c.node(NodeId(0)).gpu_type.value()].name, "T4");
  ASSERT_LT(c.gpu_types()[c.node(NodeId(0)).gpu_type.value()].memory_mib, 40000);
  ASSERT_GE(c.gpu_types()[c.node(NodeId(1)).gpu_type.value()].memory_mib, 40000);
  h.clock_.Set(10 * kHour);
  h.Start({"cheap-t4", {At{"node-0"}}, 0, "t", 10 * kHour - 20 * kMinute, -1});  // 20 min lost
  h.Start({"dear-h100", {At{"node-1"}}, 0, "t", 0, -1});                        // 10 h lost
  auto with_memory = [&](const std::string& name, MiB mib) {
    job::JobSpec j;
    j.id = JobId(h.next_id_++);
    j.name = name;
    j.priority = 10;
    j.tenant = "t";
    j.submit_time = h.clock_.Now();
    j.groups.push_back({.count = 1, .gpus = 8});
    j.groups[0].gpu_memory_mib = mib;
    EXPECT_TRUE(h.sched_->Submit(j).ok());
    h.names_.push_back(name);
    return j.id;
  };
  EXPECT_EQ(h.Names(Victims(h.Ask(with_memory("big-memory", 40000)))), (std::vector<std::string>{"dear-h100"}));
  EXPECT_EQ(h.Names(Victims(h.Ask(with_memory("small-memory", 8000)))), (std::vector<std::string>{"cheap-t4"}));

  // The room itself applies the request, also to a shape whose type set was
  // not narrowed by memory (a spec not resolved against the cluster).
  job::JobSpec raw;
  raw.groups.push_back({.count = 1, .gpus = 8});
  raw.groups[0].gpu_memory_mib = 40000;
  std::optional<GangNeed> need = GangNeed::From(raw);
  ASSERT_TRUE(need.has_value());
  EXPECT_EQ(need->shapes[0].gpu_memory, 40000);
  Room room;
  room.Attach(h.sched_->state());
  const auto running = h.sched_->running_jobs();
  for (const auto& r : running) room.Evict(r, +1, 0, c.num_nodes());
  EXPECT_EQ(room.Slots(NodeId(0), need->shapes[0]), 0);  // T4: too small
  EXPECT_EQ(room.Slots(NodeId(1), need->shapes[0]), 1);
  EXPECT_TRUE(room.Fits(*need, 1, 2));
  EXPECT_FALSE(room.Fits(*need, 0, 1));
  raw.groups[0].gpu_memory_mib = 0;
  EXPECT_EQ(room.Slots(NodeId(0), GangNeed::From(raw)->shapes[0]), 1);
}

// Reclaim on 4 x 8 GPUs: queues a, b (and c) with guarantees in GPUs.
class Reclaim : public PreemptHarness, public ::testing::Test {
 protected:
  void Queues(std::vector<std::pair<std::string, int64_t>> guarantees) {
    std::vector<tenancy::QueueSpec> specs;
    for (const auto& [name, gpus] : guarantees) {
      tenancy::QueueSpec q{.name = name, .tenants = {"t" + name}};
      q.quotas["*"] = {.guarantee = gpus * kMilliPerGpu};
      specs.push_back(q);
    }
    Build("4x8:H100", "priority-preempt", specs);
    clock_.Set(10 * kHour);
  }
};

TEST_F(Reclaim, QueueBelowItsGuaranteeTakesBackWhatAnotherBorrowed) {
  Queues({{"a", 16}, {"b", 16}});
  Start({"a0", {At{"node-0"}}, 0, "ta", 0, -1});
  Start({"b1", {At{"node-1"}}, 10, "tb", 0, 10 * kHour - 5 * kMinute});
  Start({"b2", {At{"node-2"}}, 10, "tb", 0, 10 * kHour - 2 * kMinute});
  Start({"b3", {At{"node-3"}}, 10, "tb", 0, 10 * kHour - 9 * kMinute});
  // a uses 8 of 16: an 8-GPU job of a reclaims b's borrowed 8, whatever b's
  // priority: the cheapest b job goes.
  auto plan = Ask(Submit("a-job", 1, 8, 0, "ta"));
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(Names(plan->victims), (std::vector<std::string>{"b2"}));
  EXPECT_NE(plan->reason.find("reclaim for queue 'a'"), std::string::npos) << plan->reason;
  // 16 more GPUs would take a past its guarantee: no reclaim right, and b's
  // jobs outrank it: nothing.
  EXPECT_FALSE(Ask(Submit("a-big", 2, 8, 0, "ta")).has_value());
}

TEST_F(Reclaim, OnlyBorrowedCapacityIsTakenFromAnotherQueue) {
  Queues({{"a", 16}, {"b", 16}});
  Start({"a0", {At{"node-0"}}, 10, "ta", 0, -1});
  Start({"a1", {At{"node-1"}}, 10, "ta", 0, -1});
  Start({"b2", {At{"node-2"}}, 0, "tb", 0, -1});
  Start({"b3", {At{"node-3"}}, 0, "tb", 0, -1});
  // Both queues sit at their guarantees: a higher priority in a may not push
  // b below its guarantee, and a's own jobs are its peers.
  EXPECT_FALSE(Ask(Submit("a-high", 1, 8, 10, "ta")).has_value());
  // Inside a, a higher priority still preempts.
  auto plan = Ask(Submit("a-higher", 1, 8, 20, "ta"));
  ASSERT_TRUE(plan.has_value());
  ASSERT_EQ(plan->victims.size(), 1u);
  EXPECT_EQ(sched_->Find(plan->victims[0])->spec.tenant, "ta");
}

TEST_F(Reclaim, BudgetLimitsWhatEachQueueGivesBack) {
  // b and c each borrow 8 (16 of 8); a is empty. A 16-GPU job of a reclaims,
  // but each queue gives back only 8: one job of b and one of c, even though
  // b's two jobs are the cheapest pair.
  Queues({{"a", 16}, {"b", 8}, {"c", 8}});
  Start({"b0", {At{"node-0"}}, 0, "tb", 0, 10 * kHour - 1 * kMinute});
  Start({"b1", {At{"node-1"}}, 0, "tb", 0, 10 * kHour - 2 * kMinute});
  Start({"c2", {At{"node-2"}}, 0, "tc", 0, 10 * kHour - 7 * kMinute});
  Start({"c3", {At{"node-3"}}, 0, "tc", 0, 10 * kHour - 9 * kMinute});
  auto plan = Ask(Submit("a-two", 2, 8, 0, "ta"));
  EXPECT_EQ(Names(Victims(plan)), (std::vector<std::string>{"b0", "c2"}));
  // 24 GPUs would take a past its guarantee: no reclaim right.
  EXPECT_FALSE(Ask(Submit("a-three", 3, 8, 0, "ta")).has_value());
}

// Through the scheduler: the plan is carried out and the gang placed in the
// freed domain, with the topology plan and with plain best fit.
class ThroughScheduler : public PreemptHarness, public ::testing::TestWithParam<const char*> {};

TEST_P(ThroughScheduler, GangLandsInTheFreedLeaf) {
  Build("8x8:H100/leaf=4/spine=2", GetParam());
  clock_.Set(10 * kHour);
  const TimeUs ages[] = {30, 30, 30, 30, 2, 3, 30, 30};
  std::vector<JobId> runs;
  for (int n = 0; n < 8; ++n)
    runs.push_back(Start({"n" + std::to_string(n), {At{"node-" + std::to_string(n)}}, 0, "t", 0,
                        10 * kHour - ages[n] * kMinute}));
  JobId j = Submit("big", 2, 8, 10);
  std::vector<JobId> started = sched_->Schedule();
  ASSERT_EQ(started, (std::vector<JobId>{j})) << sched_->Find(j)->last_verdict.reason;
  EXPECT_EQ(Names(sched_->preempted_in_last_pass()), (std::vector<std::string>{"n4", "n5"}));
  for (const auto& p : sched_->Find(j)->placements) {
    const std::string& node = cluster_->node(p.alloc.node).name;
    EXPECT_TRUE(node == "node-4" || node == "node-5") << node;
  }
  const auto* n4 = sched_->Find(runs[4]);
  EXPECT_EQ(n4->state, job::JobState::kPending);
  EXPECT_EQ(n4->preemptions, 1);
  EXPECT_EQ(n4->preempted_by, j);
  EXPECT_DOUBLE_EQ(n4->lost_gpu_seconds, 8.0 * 2 * 60);
  EXPECT_EQ(sched_->Find(runs[0])->state, job::JobState::kRunning);
}

TEST_P(ThroughScheduler, EvictedJobCannotEvictItsEvictor) {
  // Queue a is guaranteed 8 GPUs, b nothing. a runs two jobs (borrowing 8);
  // v (b, priority 10) evicts the cheaper, j. Later a is empty, so j has the
  // reclaim right against b's borrowed jobs: it takes w, never v.
  tenancy::QueueSpec a{.name = "a", .tenants = {"ta"}};
  a.quotas["*"] = {.guarantee = 8 * kMilliPerGpu};
  tenancy::QueueSpec b{.name = "b", .tenants = {"tb"}};
  b.quotas["*"] = {.guarantee = 0};
  Build("2x8:H100", GetParam(), {a, b});
  clock_.Set(10 * kHour);
  JobId j1 = Start({"j1", {At{"node-0"}}, 0, "ta", 0, -1});
  JobId j = Start({"j", {At{"node-1"}}, 0, "ta", 9 * kHour, -1});
  JobId v = Submit("v", 1, 8, 10, "tb");
  ASSERT_EQ(sched_->Schedule(), (std::vector<JobId>{v}));
  EXPECT_EQ(sched_->Find(j)->preempted_by, v);
  ASSERT_TRUE(sched_->Finish(j1, job::JobState::kSucceeded).ok());
  clock_.Advance(kHour);
  JobId w = Start({"w", {At{"node-0"}}, 0, "tb", 10 * kHour - 30 * kMinute, -1});  // costlier than v
  (void)w;
  clock_.Advance(kHour);
  EXPECT_EQ(Names(Victims(Ask(j))), (std::vector<std::string>{"w"}));
}

INSTANTIATE_TEST_SUITE_P(Profiles, ThroughScheduler, ::testing::Values("priority-preempt", "priority-preempt-bestfit"));

}  // namespace
}  // namespace berth::plugins::preempt
