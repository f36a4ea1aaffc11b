// Reachable entitlement: the water-filling on hand-made problems (the worked
// example of entitlement.h, demand caps, capacity nobody fits), node classes
// and fit masks of a cluster, the ledger's refresh from job demand, and the
// queue file's `entitlement:` keys.
#include "berth/tenancy/entitlement.h"

#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"
#include "berth/tenancy/ledger.h"
#include "berth/tenancy/queue_yaml.h"

namespace berth::tenancy {
namespace {

constexpr int64_t G = kMilliPerGpu;

FillProblem TwoClasses(double weight_a) {
  // class 0: 4 GPUs on 2-GPU nodes; class 1: 8 GPUs on 8-GPU nodes.
  FillProblem p;
  p.capacity = {4, 8};
  p.queues.resize(2);
  p.queues[0].weight = weight_a;
  p.queues[0].demand[0b10] = 100;  // A: 8-GPU jobs, only class 1
  p.queues[1].demand[0b11] = 100;  // B: 1-GPU jobs, anywhere
  return p;
}

TEST(WaterFill, TheWorkedExample) {
  std::vector<double> e = WaterFill(TwoClasses(1));
  EXPECT_NEAR(e[0], 6, 1e-9);
  EXPECT_NEAR(e[1], 6, 1e-9);
  e = WaterFill(TwoClasses(3));
  EXPECT_NEAR(e[0], 8, 1e-9);  // all it can use
  EXPECT_NEAR(e[1], 4, 1e-9);  // the rest
}

TEST(WaterFill, ARestrictedQueueGetsLessThanAFlatShareAndTheOthersTheRest) {
  // 3 queues, equal weights, 12 GPUs; A fits only class 1 (2 GPUs).
  FillProblem p;
  p.capacity = {10, 2};
  p.queues.resize(3);
  p.queues[0].demand[0b10] = 100;
  p.queues[1].demand[0b11] = 100;
  p.queues[2].demand[0b11] = 100;
  std::vector<double> e = WaterFill(p);
  EXPECT_NEAR(e[0], 2, 1e-9);
  EXPECT_NEAR(e[1], 5, 1e-9);
  EXPECT_NEAR(e[2], 5, 1e-9);
}

TEST(WaterFill, DemandCapsAndCapacityNobodyFits) {
  FillProblem p;
  p.capacity = {10, 6};
  p.queues.resize(3);
  p.queues[0].demand[0b01] = 1;    // small demand: met in full
  p.queues[1].demand[0b01] = 100;  // both on class 0: share what is left
  p.queues[2].demand[0b01] = 100;
  std::vector<double> e = WaterFill(p);
  EXPECT_NEAR(e[0], 1, 1e-9);
  EXPECT_NEAR(e[1], 4.5, 1e-9);
  EXPECT_NEAR(e[2], 4.5, 1e-9);  // class 1 fits nobody: entitled to nobody
  // A queue without demand or weight gets nothing.
  p.queues[2].demand.clear();
  e = WaterFill(p);
  EXPECT_NEAR(e[1], 9, 1e-9);
  EXPECT_EQ(e[2], 0);
}

TEST(WaterFill, MixedMasksOfOneQueueAndWeights) {
  // A has 2 GPUs of 1-GPU demand and lots of 8-GPU demand; B only 1-GPU.
  FillProblem p;
  p.capacity = {4, 8};
  p.queues.resize(2);
  p.queues[0].demand[0b10] = 100;
  p.queues[0].demand[0b11] = 2;
  p.queues[1].demand[0b11] = 100;
  std::vector<double> e = WaterFill(p);
  EXPECT_NEAR(e[0] + e[1], 12, 1e-9);
  EXPECT_NEAR(e[0], 6, 1e-9);
  // B weighs 3: B 9 of 12, A 3 (both fit class 1, A's mask is no constraint here).
  p.queues[1].weight = 3;
  e = WaterFill(p);
  EXPECT_NEAR(e[0], 3, 1e-9);
  EXPECT_NEAR(e[1], 9, 1e-9);
}

TEST(SplitByClass, PutsEachQueueOnTheClassesItFits) {
  FillProblem p = TwoClasses(1);  // A 6 (only class 1), B 6 (anywhere)
  const std::vector<double> e = WaterFill(p);
  const auto x = SplitByClass(p, e);
  EXPECT_NEAR(x[0][0], 0, 1e-9);
  EXPECT_NEAR(x[0][1], 6, 1e-9);
  EXPECT_NEAR(x[1][0], 4, 1e-9);  // B takes all of the small class
  EXPECT_NEAR(x[1][1], 2, 1e-9);
  EXPECT_EQ(SplitByClass(p, e), x);  // the same every time
}

TEST(FillTree, WithEveryLeafUnderTheRootItIsOneWaterFill) {
  const FillProblem p = TwoClasses(3);
  const TreeFill t = FillTree(p.capacity, {-1, -1}, {3, 1}, {p.queues[0].demand, p.queues[1].demand});
  const std::vector<double> e = WaterFill(p);
  EXPECT_EQ(t.e, e);
  EXPECT_EQ(t.split, SplitByClass(p, e));
}

TEST(FillTree, WhatASubtreeCannotUseGoesToItsSiblingsFirst) {
  // root -> org (0) {a1 (1), a2 (2)}, b (3); 12 GPUs anywhere, equal weights.
  // a2 has nothing to run: a1 takes org's half; b keeps its half. (A product
  // of weights would give a1 a quarter's weight against b's half: 4 vs 8.)
  const std::vector<int32_t> parent = {-1, 0, 0, -1};
  const std::vector<double> weight = {1, 1, 1, 1};
  std::vector<std::map<uint32_t, double>> demand(4);
  demand[1][0b1] = 100;
  demand[3][0b1] = 100;
  TreeFill t = FillTree({12}, parent, weight, demand);
  EXPECT_NEAR(t.e[1], 6, 1e-9);
  EXPECT_NEAR(t.e[2], 0, 1e-9);
  EXPECT_NEAR(t.e[3], 6, 1e-9);
  EXPECT_NEAR(t.e[0], 6, 1e-9);
  // a2 submits: the org's 6 are split inside it, b unchanged.
  demand[2][0b1] = 100;
  t = FillTree({12}, parent, weight, demand);
  EXPECT_NEAR(t.e[1], 3, 1e-9);
  EXPECT_NEAR(t.e[2], 3, 1e-9);
  EXPECT_NEAR(t.e[3], 6, 1e-9);
}

TEST(FillTree, ChildrenShareTheClassesTheirParentGot) {
  // Classes: 4 small GPUs (0), 8 big (1). org {a (8-GPU jobs: big only), s (any)}
  // against b (any). At the top org and b get 6 each; org's 6 must hold a's big
  // demand, so the split gives org big GPUs; inside org, a is entitled to what
  // of them it fits and s to the rest.
  const std::vector<int32_t> parent = {-1, 0, 0, -1};
  const std::vector<double> weight = {1, 1, 1, 1};
  std::vector<std::map<uint32_t, double>> demand(4);
  demand[1][0b10] = 100;
  demand[2][0b11] = 100;
  demand[3][0b11] = 100;
  const TreeFill t = FillTree({4, 8}, parent, weight, demand);
  EXPECT_NEAR(t.e[0], 6, 1e-9);
  EXPECT_NEAR(t.e[3], 6, 1e-9);
  EXPECT_NEAR(t.e[1] + t.e[2], 6, 1e-9);
  EXPECT_NEAR(t.split[1][0], 0, 1e-9);  // a only on big nodes
  for (int c = 0; c < 2; ++c) EXPECT_LE(t.split[1][c] + t.split[2][c], t.split[0][c] + 1e-9);
  EXPECT_NEAR(t.e[1], 3, 1e-9);
  EXPECT_NEAR(t.e[2], 3, 1e-9);
}

cluster::Cluster MakeCluster(const std::string& spec) {
  auto c = cluster::ParseClusterSpec(spec);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

job::JobSpec Job(int32_t tasks, int32_t gpus, std::string tenant) {
  job::JobSpec j;
  j.tenant = std::move(tenant);
  job::TaskGroup g;
  g.count = tasks;
  g.gpus = gpus;
  j.groups.push_back(g);
  return j;
}

TEST(Entitlement, ClassesAndFitMasks) {
  const cluster::Cluster c = MakeCluster("2x8:V100+3x2:T4");
  Entitlement e(c, nullptr);
  ASSERT_TRUE(e.usable());
  ASSERT_EQ(e.num_classes(), 2);
  EXPECT_EQ(e.node_class(0).gpus_per_node, 8);
  EXPECT_EQ(e.node_class(0).capacity, 16 * G);
  EXPECT_EQ(e.node_class(1).capacity, 6 * G);
  EXPECT_EQ(e.FitMask(Job(2, 8, "a").groups[0]), 0b01u);
  EXPECT_EQ(e.FitMask(Job(1, 1, "a").groups[0]), 0b11u);
  EXPECT_EQ(e.FitMask(Job(1, 16, "a").groups[0]), 0u);  // a task no node holds
  const DemandToken t = e.DemandOf(Job(2, 8, "a"));
  ASSERT_EQ(t.parts.size(), 1u);
  EXPECT_EQ(t.parts[0].second, 16 * G);
}

TEST(Entitlement, TheLedgerRefreshesFromDemandAndIntegrates) {
  const cluster::Cluster c = MakeCluster("1x8:V100+2x2:T4");  // 8 big + 4 small
  QueueSpec a{.name = "a", .tenants = {"a"}};
  QueueSpec b{.name = "b", .tenants = {"b"}};
  auto tree = QueueTree::Create({a, b}, c);
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  tree->set_entitlement(EntitlementMode::kReachable, 0);
  Ledger ledger(std::move(tree).value(), c);
  ASSERT_TRUE(ledger.reachable_entitlement());
  const int32_t qa = ledger.tree().Find("a"), qb = ledger.tree().Find("b");
  const job::JobSpec big = Job(2, 8, "a"), small = Job(20, 1, "b");
  const DemandToken ta = ledger.AddDemand(qa, big);
  const DemandToken tb = ledger.AddDemand(qb, small);
  ledger.Advance(0);
  // a fits only the 8-GPU node: 6 of it; b the other 6 (4 small + 2 big).
  EXPECT_NEAR(ledger.entitled(qa), 6 * G, 1e-6);
  EXPECT_NEAR(ledger.entitled(qb), 6 * G, 1e-6);
  // Split by type: a's 6 all on V100, b's on the 4 T4 and 2 of V100.
  const GpuTypeId v100 = *c.FindGpuType("V100"), t4 = *c.FindGpuType("T4");
  EXPECT_NEAR(ledger.entitled_on(qa, v100), 6 * G, 1e-6);
  EXPECT_NEAR(ledger.entitled_on(qb, t4), 4 * G, 1e-6);
  EXPECT_NEAR(ledger.entitled_on(qb, v100), 2 * G, 1e-6);
  ledger.Advance(10 * kUsPerSecond);
  EXPECT_NEAR(ledger.entitled_seconds(qa), 60.0 * G, 1e-3);
  // a leaves: b is entitled to all it fits (its 20 GPUs of demand > 12).
  ledger.RemoveDemand(qa, ta);
  ledger.Advance(20 * kUsPerSecond);
  EXPECT_EQ(ledger.entitled(qa), 0);
  EXPECT_NEAR(ledger.entitled(qb), 12 * G, 1e-6);
  ledger.RemoveDemand(qb, tb);
  EXPECT_EQ(ledger.entitlement().DemandIn(qb), 0);
}

TEST(Entitlement, ALeafTakesWhatItsSiblingLeavesBeforeOtherSubtrees) {
  const cluster::Cluster c = MakeCluster("2x8:H100");
  QueueSpec org{.name = "org"};
  QueueSpec a1{.name = "a1", .parent = "org", .tenants = {"a1"}};
  QueueSpec a2{.name = "a2", .parent = "org", .tenants = {"a2"}};
  QueueSpec b{.name = "b", .tenants = {"b"}};
  auto tree = QueueTree::Create({org, a1, a2, b}, c);
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  tree->set_entitlement(EntitlementMode::kReachable, 0);
  Ledger ledger(std::move(tree).value(), c);
  const int32_t qo = ledger.tree().Find("org"), q1 = ledger.tree().Find("a1"), q2 = ledger.tree().Find("a2"),
                qb = ledger.tree().Find("b");
  ledger.AddDemand(q1, Job(4, 8, "a1"));
  ledger.AddDemand(qb, Job(4, 8, "b"));
  ledger.Advance(0);
  // a2 runs nothing: a1 has the org's half, b its own half.
  EXPECT_NEAR(ledger.entitled(q1), 8 * G, 1e-6);
  EXPECT_NEAR(ledger.entitled(q2), 0, 1e-6);
  EXPECT_NEAR(ledger.entitled(qb), 8 * G, 1e-6);
  EXPECT_NEAR(ledger.entitled(qo), 8 * G, 1e-6);
  ledger.AddDemand(q2, Job(4, 8, "a2"));
  ledger.Advance(kUsPerSecond);
  EXPECT_NEAR(ledger.entitled(q1), 4 * G, 1e-6);
  EXPECT_NEAR(ledger.entitled(q2), 4 * G, 1e-6);
  EXPECT_NEAR(ledger.entitled(qb), 8 * G, 1e-6);
}

TEST(Entitlement, RefreshWaitsForTheInterval) {
  const cluster::Cluster c = MakeCluster("1x8:V100");
  auto tree = QueueTree::Create({QueueSpec{.name = "a", .tenants = {"a"}}}, c);
  ASSERT_TRUE(tree.ok());
  tree->set_entitlement(EntitlementMode::kReachable, 60 * kUsPerSecond);
  Ledger ledger(std::move(tree).value(), c);
  const int32_t q = ledger.tree().Find("a");
  ledger.AddDemand(q, Job(1, 2, "a"));
  ledger.Advance(0);
  EXPECT_NEAR(ledger.entitled(q), 2 * G, 1e-6);
  ledger.AddDemand(q, Job(1, 2, "a"));
  ledger.Advance(30 * kUsPerSecond);
  EXPECT_NEAR(ledger.entitled(q), 2 * G, 1e-6);  // not yet
  ledger.Advance(60 * kUsPerSecond);
  EXPECT_NEAR(ledger.entitled(q), 4 * G, 1e-6);
}

TEST(Entitlement, QueueFileKeys) {
  const cluster::Cluster c = MakeCluster("1x8:H100");
  auto f = ParseQueueYaml("entitlement: reachable\nentitlement_refresh: 5m\nqueues:\n  - name: a\n", "q.yaml");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto t = BuildQueueTree(*f, "q.yaml", c);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->entitlement(), EntitlementMode::kReachable);
  EXPECT_EQ(t->entitlement_refresh(), 300 * kUsPerSecond);
  auto flat = ParseQueueYaml("queues:\n  - name: a\n", "q.yaml");
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(flat->entitlement, EntitlementMode::kFlat);
  auto bad = ParseQueueYaml("queues:\n  - name: a\nentitlement: maxmin\n", "q.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("q.yaml:3: entitlement: expected flat or reachable"), std::string::npos)
      << bad.status().message();
  auto bad_refresh = ParseQueueYaml("entitlement_refresh: soon\nqueues:\n  - name: a\n", "q.yaml");
  ASSERT_FALSE(bad_refresh.ok());
  EXPECT_NE(bad_refresh.status().message().find("entitlement_refresh"), std::string::npos);
}

}  // namespace
}  // namespace berth::tenancy
