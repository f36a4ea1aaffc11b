// The replay under failures: the shipped example failure file and the llama3
// profile run with every index checked after each change; no job is lost,
// every finite job finishes, the same seed gives the same run, in-place repair
// beats restarting everything for a large gang, partitions work, and spares
// lent to best-effort work are used and given back at once for repairs.
#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"
#include "berth/faults/failure_file.h"
#include "berth/plugins/builtin.h"
#include "berth/sim/readers/readers.h"
#include "berth/sim/replay.h"
#include "berth/testing/paths.h"

namespace berth::sim {
namespace {

class ReplayFailures : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plugins::RegisterBuiltinPlugins(plugins_).ok());
    ASSERT_TRUE(plugins::RegisterBuiltinPolicies(policies_).ok());
  }
  PolicyResult Run(const cluster::Cluster& c, const Trace& t, const std::string& failures, ReplayOptions o) {
    auto spec = faults::LoadFailures(failures, c);
    EXPECT_TRUE(spec.ok()) << spec.status().ToString();
    o.failures = std::make_shared<const faults::FailureSpec>(std::move(*spec));
    auto r = RunReplay(c, t, *policies_.Find("topology"), plugins_, o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : PolicyResult{};
  }
  framework::PluginRegistry plugins_;
  framework::PolicyRegistry policies_;
};

TEST_F(ReplayFailures, ExampleFileLosesNoJob) {
  auto c = cluster::ParseClusterSpec("32x8:H100/leaf=8/spine=2");
  ASSERT_TRUE(c.ok());
  auto t = ReadTrace(testing::SourceDir() + "/examples/traces/failure-gangs.jsonl", "native", {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const std::string file = testing::SourceDir() + "/examples/failures/mixed.failures";
  for (auto repair : {faults::RepairMode::kRequeue, faults::RepairMode::kInPlace}) {
    ReplayOptions o;
    o.check_indexes = true;
    o.fault_options.repair = repair;
    o.fault_options.spares = {faults::SpareMode::kLeaf, 1};
    o.fault_options.restart_cost = SecondsToUs(600);
    o.fault_options.repair_cost = SecondsToUs(120);
    const PolicyResult r = Run(*c, *t, file, o);
    EXPECT_TRUE(r.failures_on);
    EXPECT_EQ(r.jobs_lost, 0);
    EXPECT_EQ(r.jobs_unfinished, 0);
    EXPECT_EQ(r.jobs_failed, 0);
    EXPECT_GT(r.restarts + r.repairs, 0);
    EXPECT_GE(r.failures.size(), 7u);
    EXPECT_GT(r.goodput, 0.5);
    EXPECT_LE(r.goodput, 1.0);
    if (repair == faults::RepairMode::kInPlace) EXPECT_GT(r.repairs, 0);
    EXPECT_EQ(Run(*c, *t, file, o).decision_log_hash, r.decision_log_hash);  // seeded: the same run
  }
}

TEST_F(ReplayFailures, InPlaceRepairKeepsALargeGangTraining) {
  // A 1,024-GPU gang on 136 nodes (8 leaves of 17) for 10 days under llama3 x 4.
  auto c = cluster::ParseClusterSpec("136x8:H100/leaf=17/spine=4");
  ASSERT_TRUE(c.ok());
  Trace t;
  job::JobSpec j;
  j.id = JobId(1);
  j.name = "big";
  j.checkpoint_interval = SecondsToUs(900);
  j.restart_cost = SecondsToUs(1800);
  job::TaskGroup g;
  g.count = 128;
  g.gpus = 8;
  j.groups.push_back(g);
  t.jobs.push_back(j);
  ReplayOptions o;
  o.until = SecondsToUs(10 * 86400);
  const PolicyResult requeue = Run(*c, t, "llama3*4", o);
  o.fault_options.repair = faults::RepairMode::kInPlace;
  o.fault_options.spares = {faults::SpareMode::kLeaf, 1};
  o.fault_options.repair_cost = SecondsToUs(300);
  o.check_indexes = true;
  const PolicyResult inplace = Run(*c, t, "llama3*4", o);
  ASSERT_EQ(requeue.effective_training_time.size(), 1u);
  EXPECT_GT(requeue.restarts, 0);
  EXPECT_EQ(inplace.restarts, 0);
  EXPECT_GT(inplace.repairs, 0);
  EXPECT_GT(inplace.spare_nodes, 0);
  EXPECT_GT(inplace.effective_training_time_large, requeue.effective_training_time_large);
  EXPECT_EQ(inplace.jobs_lost, 0);
}

TEST_F(ReplayFailures, PartitionsEachHandleTheirOwnNodes) {
  auto c = cluster::ParseClusterSpec("16x8:H100/leaf=8");
  ASSERT_TRUE(c.ok());
  Trace t;
  for (int i = 0; i < 40; ++i) {
    job::JobSpec j;
    j.id = JobId(i);
    j.name = "j" + std::to_string(i);
    j.tenant = i % 2 ? "g0-leaf-0" : "g0-leaf-1";
    j.submit_time = SecondsToUs(600.0 * i);
    j.duration = SecondsToUs(7200);
    j.checkpoint_interval = SecondsToUs(600);
    job::TaskGroup g;
    g.count = 1 + i % 3;
    g.gpus = 8;
    j.groups.push_back(g);
    t.jobs.push_back(j);
  }
  ReplayOptions o;
  o.partition_level = cluster::Level::kLeaf;
  o.check_indexes = true;
  o.fault_options.repair = faults::RepairMode::kInPlace;
  const PolicyResult r = Run(*c, t, "llama3*300", o);
  EXPECT_EQ(r.jobs_lost, 0);
  EXPECT_EQ(r.jobs_unfinished, 0);
  EXPECT_GT(r.restarts + r.repairs, 0);
}

TEST_F(ReplayFailures, LentSparesRunBestEffortWorkAndYieldToRepairs) {
  // Two 7-node gangs fill two leaves of 8 nodes, one spare each; best-effort
  // single-node jobs wait behind them and run on the spares until a fault
  // needs one. Frequent faults (llama3 x 60) make repairs take the spares.
  auto c = cluster::ParseClusterSpec("16x8:H100/leaf=8");
  ASSERT_TRUE(c.ok());
  Trace t;
  for (int i = 0; i < 2; ++i) {
    job::JobSpec j;
    j.id = JobId(i);
    j.name = "gang" + std::to_string(i);
    j.duration = SecondsToUs(2 * 86400);
    j.checkpoint_interval = SecondsToUs(900);
    j.groups.push_back({.count = 7, .gpus = 8});
    t.jobs.push_back(j);
  }
  for (int i = 2; i < 60; ++i) {
    job::JobSpec j;
    j.id = JobId(i);
    j.name = "be" + std::to_string(i);
    j.best_effort = true;
    j.submit_time = SecondsToUs(60.0 * i);
    j.duration = SecondsToUs(1800);
    j.runtime_limit = SecondsToUs(3600);
    j.checkpoint_interval = SecondsToUs(600);
    j.groups.push_back({.count = 1, .gpus = 8});
    t.jobs.push_back(j);
  }
  ReplayOptions o;
  o.check_indexes = true;
  o.fault_options.repair = faults::RepairMode::kInPlace;
  o.fault_options.spares = {faults::SpareMode::kLeaf, 1};
  o.fault_options.repair_cost = SecondsToUs(120);
  const PolicyResult plain = Run(*c, t, "llama3*60", o);
  o.fault_options.lend_spares = true;
  o.fault_options.lend_max_runtime = SecondsToUs(7200);
  const PolicyResult lent = Run(*c, t, "llama3*60", o);
  EXPECT_EQ(plain.spare_loans, 0);
  EXPECT_EQ(plain.spare_utilization, 0);
  EXPECT_GT(lent.spare_loans, 0);
  EXPECT_GT(lent.spare_loan_evictions, 0);
  EXPECT_GT(lent.spare_utilization, 0);
  EXPECT_LE(lent.spare_utilization, 1.0);
  EXPECT_GT(lent.repairs, 0);
  for (const PolicyResult* r : {&plain, &lent}) {
    EXPECT_EQ(r->jobs_lost, 0);
    EXPECT_EQ(r->jobs_unfinished, 0);
  }
  // Borrowers finish sooner than when they wait for the gangs.
  EXPECT_LT(lent.jct_s.mean, plain.jct_s.mean);
  // A runtime limit below the jobs' keeps them off the spares.
  o.fault_options.lend_max_runtime = SecondsToUs(600);
  EXPECT_EQ(Run(*c, t, "llama3*60", o).spare_loans, 0);
}

}  // namespace
}  // namespace berth::sim
