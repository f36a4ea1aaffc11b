// Workflows: a job made of stages (each an ordinary job: one task or a gang)
// joined by dependencies, the one place their semantics live; the simulator
// (sim/workflow_replay.h) and the service (server/service_workflows.cc) both
// drive a WorkflowRun. docs/workflows.md.
//
//   WorkflowSpec w = ...;                     // stages with depends_on
//   BERTH_RETURN_IF_ERROR(ValidateWorkflow(w));
//   WorkflowRun run(w);
//   for (int s : run.TakeReady()) submit(run.StageJob(s));
//   ... a stage's job ends: run.StageEnded(s, succeeded) -> kRetry: submit
//   run.StageJob(s) again; then TakeReady() for what it unblocked.
//
// Rules:
//   - A stage is ready when every dependency ended as its condition asks:
//     `after: success` (the default) needs each to have succeeded; `after:
//     any` needs each to have ended in any way (succeeded, failed, skipped).
//   - A stage that fails is run again up to `retries` times (attempts = 1 +
//     retries); then it has failed for good.
//   - A stage with `after: success` whose dependency failed for good or was
//     skipped is skipped (never started). Stages on other branches go on.
//   - The workflow ends when every stage has ended: cancelled if it was
//     cancelled, failed if a stage failed for good or was skipped, else
//     succeeded. Cancel() cancels every stage not yet ended (the caller
//     cancels the jobs of those that were submitted).
//   - Outputs: a stage's `artifact` path is given to every stage that depends
//     on it, directly or not, as BERTH_ARTIFACT_<STAGE> (the stage name upper
//     cased, other characters than A-Z, 0-9 as _), and to itself as
//     BERTH_ARTIFACT; every stage gets BERTH_WORKFLOW and BERTH_STAGE.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "berth/common/status.h"
#include "berth/job/job.h"

namespace berth::workload {

enum class StageCondition { kSuccess, kAny };
const char* StageConditionName(StageCondition c);  // "success", "any"

struct StageSpec {
  std::string name;
  std::vector<std::string> depends_on;
  StageCondition after = StageCondition::kSuccess;
  int32_t retries = 0;   // further attempts after a failure
  std::string artifact;  // output path passed on ("" = none)
  // Simulation and virtual nodes only: the first this many attempts end
  // failed (to rehearse retries and failure handling).
  int32_t fail_attempts = 0;
  job::JobSpec job;      // what the stage runs (its name is the stage's)
};

struct WorkflowSpec {
  std::string name;
  std::string tenant, queue;  // defaults for stages that name none
  int32_t priority = 0;
  TimeUs submit_time = 0;
  std::vector<StageSpec> stages;
};

inline constexpr int32_t kMaxStages = 256;
inline constexpr int32_t kMaxRetries = 100;

// OK, or InvalidArgument naming the stage: no stages, too many, an empty,
// badly formed or repeated name, an unknown dependency, a dependency on
// itself, a cycle ("stages: cycle train -> evaluate -> train"), retries out
// of 0..100, or a stage job that ValidateJob refuses.
Status ValidateWorkflow(const WorkflowSpec& w);

enum class StageState { kWaiting, kSubmitted, kSucceeded, kFailed, kSkipped, kCancelled };
const char* StageStateName(StageState s);  // waiting, submitted, succeeded, failed, skipped, cancelled
bool IsStageEnded(StageState s);

enum class WorkflowState { kRunning, kSucceeded, kFailed, kCancelled };
const char* WorkflowStateName(WorkflowState s);  // running, succeeded, failed, cancelled

// The state of one workflow. Deterministic: stages are visited in the order
// the document lists them.
class WorkflowRun {
 public:
  // `spec` must have passed ValidateWorkflow.
  explicit WorkflowRun(WorkflowSpec spec);

  // The stages ready now, in document order, marked submitted (attempt 1, or
  // nothing while cancelled/ended).
  std::vector<int32_t> TakeReady();
  // The job to submit for stage `s`'s current attempt: its spec with the
  // workflow's tenant, queue and priority where it has none, and the
  // BERTH_* variables in its env. Its name is "<workflow>/<stage>".
  job::JobSpec StageJob(int32_t s) const;

  enum class After { kNothing, kRetry };
  // Stage `s`'s submitted attempt ended. kRetry: submit StageJob(s) again
  // (the attempt counter moved on). Ignored unless the stage is submitted.
  After StageEnded(int32_t s, bool succeeded);
  // A stage job that will never be resubmitted ended cancelled from outside
  // (e.g. the job was cancelled on its own): the stage is cancelled.
  void StageCancelled(int32_t s);
  // Cancels the workflow: every stage not ended is cancelled. Returns the
  // stages that were submitted (their jobs need cancelling).
  std::vector<int32_t> Cancel();

  const WorkflowSpec& spec() const { return spec_; }
  int32_t num_stages() const { return static_cast<int32_t>(spec_.stages.size()); }
  StageState state(int32_t s) const { return stages_[s].state; }
  int32_t attempts(int32_t s) const { return stages_[s].attempts; }
  // Whether stage s's current attempt is one that fail_attempts makes fail.
  bool AttemptFails(int32_t s) const { return stages_[s].attempts <= spec_.stages[s].fail_attempts; }
  WorkflowState state() const;
  bool ended() const { return state() != WorkflowState::kRunning; }
  // "BERTH_ARTIFACT_" + the stage name made a variable name.
  static std::string ArtifactVar(const std::string& stage);

 private:
  struct Stage {
    StageState state = StageState::kWaiting;
    int32_t attempts = 0;
    std::vector<int32_t> deps;       // indexes
    std::vector<int32_t> ancestors;  // every stage it depends on, directly or not, ascending
  };
  void SkipBlocked();

  WorkflowSpec spec_;
  std::vector<Stage> stages_;
  bool cancelled_ = false;
};

}  // namespace berth::workload
