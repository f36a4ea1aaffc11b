// Preemption through `berth simulate` (RunSimulation): the checkpoint,
// grace, restore and high-priority options, and the preemptions and GPU-hours
// lost in the results and the JSON; plugin arguments.
#include <gtest/gtest.h>

#include <fstream>

#include <unistd.h>

#include "berth/plugins/builtin.h"
#include "berth/sim/report/json_report.h"
#include "berth/sim/simulate.h"

namespace berth::plugins::preempt {
namespace {

constexpr TimeUs kMinute = 60 * kUsPerSecond;

// Four 8-GPU jobs fill 4 x 8 GPUs at 0 for 10 h; at 1 h a 2 x 8 job of
// priority 10 arrives for an hour.
std::string WriteTrace() {
  // One file per process: test binaries of other builds may run at the same time.
  const std::string path =
      ::testing::TempDir() + "preempt_simulate_trace." + std::to_string(::getpid()) + ".jsonl";
  std::ofstream f(path);
  for (int i = 0; i < 4; ++i)
    f << R"({"name":"low)" << i << R"(","submit_time_s":0,"duration_s":36000,"groups":[{"gpus":8}]})" << "\n";
  f << R"({"name":"high","priority":10,"submit_time_s":3600,"duration_s":3600,"groups":[{"count":2,"gpus":8}]})"
    << "\n";
  return path;
}

sim::SimulateOptions Options() {
  sim::SimulateOptions o;
  o.cluster = "4x8:H100/leaf=2";
  o.trace = WriteTrace();
  o.mode = "replay";
  o.policies = {"priority", "priority-preempt", "priority-preempt-lpf"};
  return o;
}

TEST(PreemptSimulate, CheckpointsBoundTheWorkLost) {
  sim::SimulateOptions o = Options();
  o.checkpoint_interval = 25 * kMinute;  // at 1 h the last checkpoint is 10 minutes old
  o.preemption_grace = 30 * kUsPerSecond;
  o.restore_cost = 2 * kMinute;
  auto out = sim::RunSimulation(o);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->results.size(), 3u);
  EXPECT_EQ(out->results[0].preemptions, 0);
  EXPECT_EQ(out->results[0].gpu_hours_lost, 0);
  for (int p = 1; p < 3; ++p) {
    const sim::PolicyResult& r = out->results[p];
    EXPECT_EQ(r.preemptions, 2) << r.policy;
    EXPECT_NEAR(r.gpu_hours_lost, 2 * 8 * 10.0 / 60, 1e-9) << r.policy;
    EXPECT_EQ(r.jobs_unfinished, 0) << r.policy;
  }
  // high: submitted at 1 h, starts at once, works after the 30 s grace for 1 h.
  const std::string json = sim::ResultsToJson(*out);
  EXPECT_NE(json.find("\"gpu_hours_lost\""), std::string::npos);
  EXPECT_NE(json.find("\"preemptions\": 2"), std::string::npos) << json.substr(0, 2000);
}

TEST(PreemptSimulate, WithoutCheckpointsEverythingSinceTheStartIsLost) {
  auto out = sim::RunSimulation(Options());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_NEAR(out->results[1].gpu_hours_lost, 2 * 8 * 1.0, 1e-9);
}

TEST(PreemptSimulate, HighPriorityShareIsSeededPerJob) {
  sim::SimulateOptions o = Options();
  o.high_priority_share = 1;  // every job priority 10: nobody outranks anybody
  auto out = sim::RunSimulation(o);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->results[1].preemptions, 0);
  o.high_priority_share = 0.5;
  auto a = sim::RunSimulation(o);
  auto b = sim::RunSimulation(o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->results[1].decision_log_hash, b->results[1].decision_log_hash);
}

TEST(PreemptSimulate, BadOptionsAreRejected) {
  sim::SimulateOptions o = Options();
  o.checkpoint_interval = 0;
  EXPECT_FALSE(o.Validate().ok());
  o = Options();
  o.restore_cost = -1;
  EXPECT_FALSE(o.Validate().ok());
  o = Options();
  o.preemption_grace = -1;
  EXPECT_FALSE(o.Validate().ok());
  o = Options();
  o.high_priority_share = 1.5;
  EXPECT_NE(o.Validate().message().find("--high-priority"), std::string::npos);
}

TEST(PreemptPlugins, ArgsAreChecked) {
  framework::PluginRegistry r;
  ASSERT_TRUE(RegisterBuiltinPlugins(r).ok());
  for (const char* name : {"preempt", "preempt-lowest-priority"}) {
    EXPECT_TRUE(r.Create(name, {{"min_runtime_s", "0"}}).ok()) << name;
    EXPECT_FALSE(r.Create(name, {{"min_runtime_s", "-1"}}).ok()) << name;
    EXPECT_FALSE(r.Create(name, {{"min_runtime_s", "ten"}}).ok()) << name;
    auto bad = r.Create(name, {{"min_runtime", "60"}});
    ASSERT_FALSE(bad.ok()) << name;
    EXPECT_NE(bad.status().message().find("unknown arg 'min_runtime'"), std::string::npos);
  }
  framework::PolicyRegistry policies;
  ASSERT_TRUE(RegisterBuiltinPolicies(policies).ok());
  for (const char* name : {"priority-preempt", "priority-preempt-lpf"}) {
    auto p = policies.Find(name);
    ASSERT_TRUE(p.ok()) << name;
    EXPECT_EQ(p->queue_sort, "priority");
    ASSERT_EQ(p->post_filter.size(), 1u);
    ASSERT_EQ(p->plan.size(), 1u);
    EXPECT_EQ(p->plan[0].name, "topology");
  }
}

}  // namespace
}  // namespace berth::plugins::preempt
