// Topology-aware gang placement through the scheduler with the "topology" policy.
#include <gtest/gtest.h>

#include <set>

#include "berth/cluster/loaders.h"
#include "berth/plugins/builtin.h"
#include "berth/scheduler/scheduler.h"

namespace berth::plugins {
namespace {

using cluster::Level;

class TopologyGang : public ::testing::Test {
 protected:
  void Build(const std::string& spec) {
    auto c = cluster::ParseClusterSpec(spec);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    cluster_ = std::make_unique<cluster::Cluster>(std::move(c).value());
    framework::PluginRegistry plugins;
    ASSERT_TRUE(RegisterBuiltinPlugins(plugins).ok());
    framework::PolicyRegistry policies;
    ASSERT_TRUE(RegisterBuiltinPolicies(policies).ok());
    auto fw = framework::Framework::Create(*policies.Find("topology"), plugins);
    ASSERT_TRUE(fw.ok());
    scheduler::SchedulerOptions o;
    o.check_indexes = true;
    sched_ = std::make_unique<scheduler::Scheduler>(*cluster_, std::move(fw).value(), o, clock_);
  }

  JobId Submit(int32_t tasks, int32_t gpus, std::optional<Level> required = std::nullopt, int32_t block = 0,
               Level block_level = Level::kNvlink) {
    job::JobSpec j;
    j.id = JobId(next_id_++);
    j.name = "job-" + std::to_string(j.id.value());
    job::TaskGroup g;
    g.count = tasks;
    g.gpus = gpus;
    g.block_tasks = block;
    g.block_level = block_level;
    j.groups.push_back(g);
    j.required_level = required;
    EXPECT_TRUE(sched_->Submit(j).ok());
    return j.id;
  }

  // Node names of a job's tasks in rank order.
  std::vector<std::string> Nodes(JobId id) {
    std::vector<std::string> out;
    for (const auto& p : sched_->Find(id)->placements) out.push_back(cluster_->node(p.alloc.node).name);
    return out;
  }
  std::set<std::string> Leaves(JobId id) {
    std::set<std::string> out;
    for (const auto& p : sched_->Find(id)->placements)
      out.insert(cluster_->domain(cluster_->node(p.alloc.node).domain[static_cast<int>(Level::kLeaf)]).name);
    return out;
  }
  bool Running(JobId id) { return sched_->Find(id)->state == job::JobState::kRunning; }

  ManualClock clock_;
  std::unique_ptr<cluster::Cluster> cluster_;
  std::unique_ptr<scheduler::Scheduler> sched_;
  int64_t next_id_ = 0;
};

TEST_F(TopologyGang, GangFillsOneLeafInRankOrder) {
  Build("16x8:H100/leaf=4/spine=2");
  JobId a = Submit(4, 8);
  sched_->Schedule();
  ASSERT_TRUE(Running(a));
  EXPECT_EQ(Nodes(a), (std::vector<std::string>{"node-0", "node-1", "node-2", "node-3"}));
}

TEST_F(TopologyGang, PicksTheTightestLeafSoLargeBlocksStayWhole) {
  Build("16x8:H100/leaf=4/spine=2");
  // Leaf 1 gets a 1-node job: it then has 24 free GPUs, the tightest fit for 3 nodes.
  JobId small = Submit(1, 8, Level::kLeaf);
  sched_->Schedule();
  ASSERT_TRUE(Running(small));
  JobId gang = Submit(3, 8);
  sched_->Schedule();
  ASSERT_TRUE(Running(gang));
  EXPECT_EQ(Leaves(gang), Leaves(small));
}

TEST_F(TopologyGang, RequiredLeafWaitsWhenOnlyTwoLeavesHoldIt) {
  Build("8x8:H100/leaf=4/spine=2");
  // One node down in each leaf: 3 whole nodes per leaf, 6 in the spine.
  ASSERT_TRUE(sched_->SetNodeUp(*cluster_->FindNode("node-0"), false).ok());
  ASSERT_TRUE(sched_->SetNodeUp(*cluster_->FindNode("node-4"), false).ok());
  JobId strict = Submit(4, 8, Level::kLeaf);
  sched_->Schedule();
  EXPECT_FALSE(Running(strict));
  EXPECT_EQ(sched_->Find(strict)->last_verdict.code, framework::VerdictCode::kUnschedulable);
  EXPECT_EQ(sched_->state().allocated_milli(), 0);  // the waiting gang holds nothing
  JobId loose = Submit(4, 8);
  sched_->Schedule();
  EXPECT_TRUE(Running(loose));
  EXPECT_EQ(Leaves(loose).size(), 2u);
  EXPECT_FALSE(Running(strict));
}

TEST_F(TopologyGang, TensorParallelBlocksNeverSplitAcrossNvlinkDomains) {
  Build("4x8:H100/leaf=4");
  // Leave 2-GPU holes on nodes 0 and 1.
  for (int i = 0; i < 2; ++i) {
    job::JobSpec j;
    j.id = JobId(next_id_++);
    j.name = "frag" + std::to_string(i);
    j.groups.push_back(job::TaskGroup{.count = 1, .gpus = 6});
    ASSERT_TRUE(sched_->Submit(j).ok());
    sched_->Schedule();
  }
  // 2 blocks of 4 tasks x 2 GPUs: each block of 8 GPUs must sit on one node.
  JobId tp = Submit(8, 2, std::nullopt, 4, Level::kNvlink);
  sched_->Schedule();
  ASSERT_TRUE(Running(tp));
  auto nodes = Nodes(tp);
  for (int b = 0; b < 2; ++b)
    for (int i = 1; i < 4; ++i) EXPECT_EQ(nodes[b * 4 + i], nodes[b * 4]) << "block " << b;
  EXPECT_NE(nodes[0], nodes[4]);
  // Without blocks, 2-GPU tasks would be free to fill the holes.
  sched_->Finish(tp, job::JobState::kSucceeded);
  JobId loose = Submit(8, 2);
  sched_->Schedule();
  ASSERT_TRUE(Running(loose));
}

TEST_F(TopologyGang, GangThatCannotFitHoldsNothing) {
  Build("4x8:H100/leaf=2");
  JobId big = Submit(5, 8);
  sched_->Schedule();
  EXPECT_FALSE(Running(big));
  EXPECT_EQ(sched_->Find(big)->state, job::JobState::kFailed);  // larger than the cluster: never fits
  EXPECT_EQ(sched_->state().allocated_milli(), 0);
  JobId fits = Submit(4, 8);
  sched_->Schedule();
  EXPECT_TRUE(Running(fits));
  EXPECT_TRUE(sched_->state().CheckIndexes().ok());
}

TEST_F(TopologyGang, ElasticGroupTakesWhatFitsAboveItsMinimum) {
  Build("4x8:H100/leaf=4");
  job::JobSpec j;
  j.id = JobId(next_id_++);
  j.name = "elastic";
  j.groups.push_back(job::TaskGroup{.count = 8, .min_count = 2, .gpus = 8});
  ASSERT_TRUE(sched_->Submit(j).ok());
  sched_->Schedule();
  ASSERT_TRUE(Running(j.id));
  EXPECT_EQ(sched_->Find(j.id)->placements.size(), 4u);
}

// Spine 0 keeps one whole node per leaf (24 GPUs), spine 1 two whole leaves (32).
class PreferredLevel : public TopologyGang {
 protected:
  void SetUp() override {
    Build("12x8:H100/leaf=2/spine=3");
    for (const char* n : {"node-1", "node-3", "node-5", "node-10", "node-11"})
      ASSERT_TRUE(sched_->SetNodeUp(*cluster_->FindNode(n), false).ok());
  }
  JobId SubmitSpec(job::JobSpec j) {
    j.id = JobId(next_id_++);
    j.name = "job-" + std::to_string(j.id.value());
    EXPECT_TRUE(sched_->Submit(j).ok());
    return j.id;
  }
};

TEST_F(PreferredLevel, FewestLeavesInsteadOfTheTightestSpine) {
  JobId loose = Submit(3, 8);
  sched_->Schedule();
  ASSERT_TRUE(Running(loose));
  EXPECT_EQ(Leaves(loose).size(), 3u);  // spine 0, the tightest
  sched_->Finish(loose, job::JobState::kSucceeded);
  job::JobSpec j;
  j.groups.push_back(job::TaskGroup{.count = 3, .gpus = 8});
  j.preferred_level = Level::kLeaf;
  JobId pref = SubmitSpec(j);
  sched_->Schedule();
  ASSERT_TRUE(Running(pref));
  EXPECT_EQ(Leaves(pref).size(), 2u);
  EXPECT_EQ(Nodes(pref), (std::vector<std::string>{"node-6", "node-7", "node-8"}));
  EXPECT_TRUE(sched_->state().CheckIndexes().ok());
}

TEST_F(PreferredLevel, AGroupPreferenceReplacesTheJobs) {
  // The job prefers NVLink domains (one node each: no help), its group a leaf.
  job::JobSpec j;
  j.groups.push_back(job::TaskGroup{.count = 3, .gpus = 8});
  j.groups[0].preferred_level = Level::kLeaf;
  j.preferred_level = Level::kNvlink;
  JobId pref = SubmitSpec(j);
  sched_->Schedule();
  ASSERT_TRUE(Running(pref));
  // The whole gang fits no leaf: it goes to the tightest spine, where its group
  // then takes the fewest leaves that spine offers.
  EXPECT_EQ(Leaves(pref).size(), 3u);
}

TEST_F(PreferredLevel, AGroupRequiredWithinOneLeaf) {
  job::JobSpec j;
  j.groups.push_back(job::TaskGroup{.name = "ps", .count = 1, .gpus = 8});
  j.groups.push_back(job::TaskGroup{.name = "workers", .count = 2, .gpus = 8});
  j.groups[1].required_level = Level::kLeaf;
  JobId mixed = SubmitSpec(j);
  sched_->Schedule();
  ASSERT_TRUE(Running(mixed));
  // Spine 0 has no leaf with two whole nodes: spine 1, the workers on one leaf.
  EXPECT_EQ(Nodes(mixed), (std::vector<std::string>{"node-6", "node-8", "node-9"}));
  // A group wider than any domain of its required level never fits.
  job::JobSpec big;
  big.groups.push_back(job::TaskGroup{.name = "w", .count = 3, .gpus = 8});
  big.groups[0].required_level = Level::kLeaf;
  JobId never = SubmitSpec(big);
  sched_->Schedule();
  EXPECT_EQ(sched_->Find(never)->state, job::JobState::kFailed);
  EXPECT_NE(sched_->Find(never)->last_verdict.reason.find("group 'w' needs 24 GPUs; no leaf domain"), std::string::npos)
      << sched_->Find(never)->last_verdict.reason;
  EXPECT_TRUE(sched_->state().CheckIndexes().ok());
}

}  // namespace
}  // namespace berth::plugins
