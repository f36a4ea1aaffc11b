// Workflows in replay: a stage starts when its dependencies end, a failed
// stage is retried, dependents of a permanent failure never start, and the
// results carry workflow completion times. Also through the native reader.
#include "berth/sim/workflow_replay.h"

#include <gtest/gtest.h>

#include <fstream>

#include "berth/cluster/loaders.h"
#include "berth/plugins/builtin.h"
#include "berth/sim/readers/readers.h"
#include "berth/sim/replay.h"

namespace berth::sim {
namespace {

workload::StageSpec Stage(const std::string& name, double dur_s, int32_t gpus, int32_t tasks,
                          std::vector<std::string> deps = {}) {
  workload::StageSpec s;
  s.name = name;
  s.depends_on = std::move(deps);
  s.job.name = name;
  s.job.duration = SecondsToUs(dur_s);
  s.job.groups.push_back({.count = tasks, .gpus = gpus, .cpu_milli = 1000});
  return s;
}

workload::WorkflowSpec Pipeline(double submit_s) {
  workload::WorkflowSpec w;
  w.name = "pipe";
  w.submit_time = SecondsToUs(submit_s);
  w.stages = {Stage("prepare", 10, 0, 1), Stage("train", 100, 8, 2, {"prepare"}),
              Stage("evaluate", 20, 1, 1, {"train"}), Stage("serve", 50, 1, 1, {"evaluate"})};
  return w;
}

class WorkflowReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plugins::RegisterBuiltinPlugins(plugins_).ok());
    ASSERT_TRUE(plugins::RegisterBuiltinPolicies(policies_).ok());
  }
  StatusOr<PolicyResult> Run(const Trace& t) {
    auto c = cluster::ParseClusterSpec("2x8:H100");
    EXPECT_TRUE(c.ok());
    auto p = policies_.Find("fifo");
    EXPECT_TRUE(p.ok());
    return RunReplay(*c, t, *p, plugins_, {});
  }
  framework::PluginRegistry plugins_;
  framework::PolicyRegistry policies_;
};

TEST_F(WorkflowReplayTest, StagesRunInDependencyOrder) {
  Trace t;
  t.workflows.push_back(Pipeline(5));
  auto r = Run(t);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // prepare 5-15, train 15-115, evaluate 115-135, serve 135-185.
  EXPECT_EQ(r->workflows.total, 1);
  EXPECT_EQ(r->workflows.succeeded, 1);
  EXPECT_DOUBLE_EQ(r->workflows.completion_s.mean, 180);
  EXPECT_EQ(r->jobs_total, 4);
  EXPECT_EQ(r->jobs_unfinished, 0);
  EXPECT_DOUBLE_EQ(r->makespan_s, 180);
  // Each stage's JCT runs from its release: no stage waited.
  EXPECT_DOUBLE_EQ(r->queue_delay_s.max, 0);
}

TEST_F(WorkflowReplayTest, RetriesThenSkipsAfterAPermanentFailure) {
  Trace t;
  workload::WorkflowSpec ok = Pipeline(0);
  ok.name = "retried";
  ok.stages[1].retries = 2;
  ok.stages[1].fail_attempts = 1;  // the first train attempt fails, the second succeeds
  workload::WorkflowSpec bad = Pipeline(0);
  bad.name = "failing";
  bad.stages[0].retries = 1;
  bad.stages[0].fail_attempts = 2;  // both prepare attempts fail: nothing after it starts
  t.workflows = {ok, bad};
  WorkflowReplay w = ExpandWorkflows(t);
  EXPECT_EQ(w.trace.jobs.size(), 4u + 2 + 4 + 1);  // retries add attempts
  auto r = Run(t);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->workflows.total, 2);
  EXPECT_EQ(r->workflows.succeeded, 1);
  EXPECT_EQ(r->workflows.failed, 1);
  // Jobs run: retried 5 (train twice), failing 2 (prepare twice).
  EXPECT_EQ(r->jobs_total, 7);
  EXPECT_EQ(r->jobs_failed, 3);
  // retried: prepare 0-10, train 10-110 (fails), 110-210, evaluate 210-230, serve 230-280;
  // failing: prepare 0-10 (fails), 10-20 (fails): ends at 20.
  EXPECT_DOUBLE_EQ(r->workflows.completion_s.max, 280);
  EXPECT_DOUBLE_EQ(r->workflows.completion_s.mean, (280.0 + 20) / 2);
}

// A service stage (kind: service) is deployed when its replicas are placed:
// the stage succeeds then and the stages after it start, while the replicas
// serve on for the stage's duration.
TEST_F(WorkflowReplayTest, AServiceStageSucceedsWhenDeployed) {
  const std::string path = ::testing::TempDir() + "/wf-service.jsonl";
  std::ofstream(path)
      << R"({"name":"p","submit_time_s":0,"stages":[)"
         R"({"name":"train","duration_s":100,"groups":[{"count":1,"gpus":8}]},)"
         R"({"name":"serve","depends_on":["train"],"kind":"service","replicas":3,"duration_s":1000,"groups":[{"gpus":1}]},)"
         R"({"name":"smoke","depends_on":["serve"],"duration_s":5,"groups":[{}]}]})"
         "\n";
  auto t = ReadTrace(path, "", {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_TRUE(t->workflows[0].stages[1].job.service.has_value());
  WorkflowReplay w = ExpandWorkflows(*t);
  ASSERT_EQ(w.trace.jobs.size(), 3u);
  EXPECT_FALSE(w.trace.jobs[1].service.has_value());  // its replicas as one job of 3 tasks
  EXPECT_EQ(w.trace.jobs[1].groups[0].count, 3);
  auto r = Run(*t);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // train 0-100; serve deployed at 100 (runs to 1100); smoke 100-105: the workflow ends at 105.
  EXPECT_EQ(r->workflows.succeeded, 1);
  EXPECT_DOUBLE_EQ(r->workflows.completion_s.mean, 105);
  EXPECT_DOUBLE_EQ(r->makespan_s, 1100);
}

TEST_F(WorkflowReplayTest, NativeTraceLinesWithStages) {
  const std::string path = ::testing::TempDir() + "/wf.jsonl";
  std::ofstream(path)
      << R"({"name":"solo","submit_time_s":0,"duration_s":30,"groups":[{"gpus":1}]})" "\n"
      << R"({"name":"p","tenant":"ml","submit_time_s":1,"stages":[)"
         R"({"name":"a","duration_s":10,"artifact":"/out/a","groups":[{}]},)"
         R"({"name":"b","depends_on":["a"],"after":"success","retries":1,"duration_s":10,"groups":[{"gpus":8}]}]})"
         "\n";
  auto t = ReadTrace(path, "", {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 1u);
  ASSERT_EQ(t->workflows.size(), 1u);
  EXPECT_EQ(t->workflows[0].stages[1].retries, 1);
  EXPECT_EQ(t->workflows[0].stages[0].artifact, "/out/a");
  WorkflowReplay w = ExpandWorkflows(*t);
  EXPECT_EQ(w.trace.jobs[2].env.at("BERTH_ARTIFACT_A"), "/out/a");
  EXPECT_EQ(w.trace.jobs[2].tenant, "ml");
  auto r = Run(*t);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->workflows.succeeded, 1);
  EXPECT_DOUBLE_EQ(r->workflows.completion_s.mean, 20);

  const std::pair<const char*, const char*> bad[] = {
      {R"({"name":"p","stages":[{"name":"a","depends_on":["zz"],"groups":[{}]}]})",
       ":1: stages[0] ('a').depends_on: no stage named 'zz'"},
      {R"({"name":"p","stages":[{"name":"a","depends_on":["b"],"groups":[{}]},{"name":"b","depends_on":["a"],"groups":[{}]}]})",
       "cycle a -> b -> a"},
      {R"({"name":"p","stages":[{"name":"a","groups":[{"gpus":"8"}]}]})", ":1: stages[0] ('a'): groups[0].gpus"},
      {R"({"name":"p","stages":[{"name":"a","after":"done","groups":[{}]}]})", "stages[0].after"},
      {R"({"name":"p","groups":[{}],"stages":[{"name":"a","groups":[{}]}]})", "unknown key 'groups'"},
      {R"({"name":"p","stages":[]})", "stages: expected a non-empty array"},
  };
  for (const auto& [line, mentions] : bad) {
    std::ofstream(path) << line << "\n";
    auto b = ReadTrace(path, "", {});
    ASSERT_FALSE(b.ok()) << line;
    EXPECT_NE(b.status().message().find(mentions), std::string::npos) << b.status().message();
  }
}

}  // namespace
}  // namespace berth::sim
