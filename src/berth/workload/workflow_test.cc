// The workflow core: DAG validation and the stage state machine (order,
// conditions, retries, skips after a permanent failure, cancel, artifacts).
#include "berth/workload/workflow.h"

#include <gtest/gtest.h>

namespace berth::workload {
namespace {

StageSpec Stage(const std::string& name, std::vector<std::string> deps = {}, int32_t retries = 0) {
  StageSpec s;
  s.name = name;
  s.depends_on = std::move(deps);
  s.retries = retries;
  s.job.name = name;
  s.job.groups.push_back({});
  return s;
}

WorkflowSpec Pipeline() {
  WorkflowSpec w;
  w.name = "pipe";
  w.tenant = "ml";
  w.stages = {Stage("prepare"), Stage("train", {"prepare"}, 2), Stage("evaluate", {"train"}),
              Stage("serve", {"evaluate"})};
  w.stages[0].artifact = "/data/prepared";
  w.stages[1].artifact = "/ckpt/model";
  return w;
}

TEST(Workflow, ValidationNamesTheStage) {
  EXPECT_TRUE(ValidateWorkflow(Pipeline()).ok());
  WorkflowSpec w = Pipeline();
  w.stages[2].depends_on = {"trian"};
  EXPECT_NE(ValidateWorkflow(w).message().find("stages[2] ('evaluate').depends_on: no stage named 'trian'"),
            std::string::npos)
      << ValidateWorkflow(w).message();
  w = Pipeline();
  w.stages[0].depends_on = {"evaluate"};
  EXPECT_NE(ValidateWorkflow(w).message().find("cycle prepare -> evaluate -> train -> prepare"), std::string::npos)
      << ValidateWorkflow(w).message();
  w = Pipeline();
  w.stages[3].name = "train";
  EXPECT_NE(ValidateWorkflow(w).message().find("stages[3].name: stage 'train' appears twice"), std::string::npos);
  w = Pipeline();
  w.stages[1].depends_on = {"train"};
  EXPECT_NE(ValidateWorkflow(w).message().find("depends on itself"), std::string::npos);
  w = Pipeline();
  w.stages[1].retries = 101;
  EXPECT_NE(ValidateWorkflow(w).message().find("stages[1] ('train').retries"), std::string::npos);
  w = Pipeline();
  w.stages[0].name = "a b";
  EXPECT_NE(ValidateWorkflow(w).message().find("stages[0].name"), std::string::npos);
  w.stages.clear();
  EXPECT_FALSE(ValidateWorkflow(w).ok());
}

TEST(Workflow, StagesRunInOrderWithArtifacts) {
  WorkflowRun run(Pipeline());
  EXPECT_EQ(run.TakeReady(), std::vector<int32_t>{0});
  EXPECT_TRUE(run.TakeReady().empty());
  EXPECT_EQ(run.StageEnded(0, true), WorkflowRun::After::kNothing);
  EXPECT_EQ(run.TakeReady(), std::vector<int32_t>{1});
  job::JobSpec train = run.StageJob(1);
  EXPECT_EQ(train.name, "pipe/train");
  EXPECT_EQ(train.tenant, "ml");
  EXPECT_EQ(train.env.at("BERTH_ARTIFACT_PREPARE"), "/data/prepared");
  EXPECT_EQ(train.env.at("BERTH_ARTIFACT"), "/ckpt/model");
  EXPECT_EQ(train.env.at("BERTH_STAGE"), "train");
  run.StageEnded(1, true);
  EXPECT_EQ(run.TakeReady(), std::vector<int32_t>{2});
  // Later stages see every ancestor's artifact.
  EXPECT_EQ(run.StageJob(2).env.at("BERTH_ARTIFACT_PREPARE"), "/data/prepared");
  EXPECT_EQ(run.StageJob(2).env.at("BERTH_ARTIFACT_TRAIN"), "/ckpt/model");
  run.StageEnded(2, true);
  EXPECT_EQ(run.TakeReady(), std::vector<int32_t>{3});
  EXPECT_EQ(run.state(), WorkflowState::kRunning);
  run.StageEnded(3, true);
  EXPECT_EQ(run.state(), WorkflowState::kSucceeded);
}

TEST(Workflow, AFailedStageIsRetriedThenItsDependentsAreSkipped) {
  WorkflowRun run(Pipeline());
  run.TakeReady();
  run.StageEnded(0, true);
  EXPECT_EQ(run.TakeReady(), std::vector<int32_t>{1});
  EXPECT_EQ(run.StageEnded(1, false), WorkflowRun::After::kRetry);  // attempt 2
  EXPECT_EQ(run.attempts(1), 2);
  EXPECT_EQ(run.StageJob(1).env.at("BERTH_STAGE_ATTEMPT"), "2");
  EXPECT_EQ(run.StageEnded(1, false), WorkflowRun::After::kRetry);  // attempt 3
  EXPECT_EQ(run.StageEnded(1, false), WorkflowRun::After::kNothing);  // retries used up
  EXPECT_EQ(run.state(1), StageState::kFailed);
  EXPECT_TRUE(run.TakeReady().empty());
  EXPECT_EQ(run.state(2), StageState::kSkipped);
  EXPECT_EQ(run.state(3), StageState::kSkipped);
  EXPECT_EQ(run.state(), WorkflowState::kFailed);
}

TEST(Workflow, AfterAnyRunsOnFailureAndOtherBranchesGoOn) {
  WorkflowSpec w;
  w.name = "w";
  w.stages = {Stage("a"), Stage("b", {"a"}), Stage("c"), Stage("cleanup", {"b", "c"})};
  w.stages[3].after = StageCondition::kAny;
  WorkflowRun run(w);
  EXPECT_EQ(run.TakeReady(), (std::vector<int32_t>{0, 2}));
  run.StageEnded(0, false);  // no retries: failed for good
  EXPECT_TRUE(run.TakeReady().empty());
  EXPECT_EQ(run.state(1), StageState::kSkipped);
  run.StageEnded(2, true);
  EXPECT_EQ(run.TakeReady(), std::vector<int32_t>{3});  // after: any
  run.StageEnded(3, true);
  EXPECT_EQ(run.state(), WorkflowState::kFailed);
}

TEST(Workflow, CancelEndsEveryStage) {
  WorkflowRun run(Pipeline());
  run.TakeReady();
  EXPECT_EQ(run.Cancel(), std::vector<int32_t>{0});
  for (int32_t s = 0; s < run.num_stages(); ++s) EXPECT_EQ(run.state(s), StageState::kCancelled);
  EXPECT_EQ(run.state(), WorkflowState::kCancelled);
  EXPECT_TRUE(run.TakeReady().empty());
  EXPECT_EQ(run.StageEnded(0, false), WorkflowRun::After::kNothing);
  EXPECT_TRUE(run.Cancel().empty());
}

TEST(Workflow, FailAttemptsRehearseFailures) {
  WorkflowSpec w = Pipeline();
  w.stages[1].fail_attempts = 1;
  WorkflowRun run(w);
  run.TakeReady();
  run.StageEnded(0, run.AttemptFails(0) == false);
  run.TakeReady();
  EXPECT_TRUE(run.AttemptFails(1));
  EXPECT_EQ(run.StageEnded(1, !run.AttemptFails(1)), WorkflowRun::After::kRetry);
  EXPECT_FALSE(run.AttemptFails(1));
  EXPECT_EQ(WorkflowRun::ArtifactVar("pre-process.v2"), "BERTH_ARTIFACT_PRE_PROCESS_V2");
}

}  // namespace
}  // namespace berth::workload
