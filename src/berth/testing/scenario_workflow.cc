// Scenario commands for workflows (tests/scenarios/README.md, "Workflows"):
//
//   stage pipe prepare duration=1m cpu=4
//   stage pipe train depends=prepare retries=1 gpus=8 count=2
//   start-workflow pipe            # submits the ready stages as jobs pipe/prepare, ...
//   finish pipe/prepare            # the runner then submits pipe/train
//   finish pipe/train state=failed # retried as pipe/train#2
//   expect workflow pipe running prepare=succeeded train=submitted
//   cancel-workflow pipe
//
// The stage state machine is workload::WorkflowRun, the one the simulator
// and the service drive; the runner submits a stage's job with `submit` and
// the stage's job and group keys, and after every command moves each
// workflow on from the states of its stage jobs.
#include <map>
#include <memory>

#include "berth/testing/scenario.h"
#include "berth/workload/workflow.h"

namespace berth::testing {
namespace {

using Args = ScenarioArgs;
using Runner = ScenarioRunner;

struct ScenarioWorkflow {
  workload::WorkflowSpec spec;
  std::vector<std::vector<std::string>> submit_args;  // per stage: its job and group keys
  std::unique_ptr<workload::WorkflowRun> run;         // once started
};

struct WorkflowState {
  std::map<std::string, ScenarioWorkflow> workflows;
};

std::string JobOf(const ScenarioWorkflow& w, int32_t s) {
  std::string name = w.spec.name + "/" + w.spec.stages[s].name;
  if (w.run->attempts(s) > 1) name += "#" + std::to_string(w.run->attempts(s));
  return name;
}

Status SubmitStage(Runner& r, ScenarioWorkflow& w, int32_t s) {
  std::vector<std::string> tokens = {"submit", "job=" + JobOf(w, s)};
  for (const auto& t : w.submit_args[s]) tokens.push_back(t);
  Status st = r.RunCommand(tokens);
  if (!st.ok()) return InvalidArgument("stage '" + w.spec.stages[s].name + "': " + st.message());
  return Status::Ok();
}

// Moves every started workflow on until nothing changes.
Status Step(Runner& r, WorkflowState& st) {
  if (!r.has_scheduler()) return Status::Ok();
  BERTH_ASSIGN_OR_RETURN(scheduler::Scheduler * sched, r.Sched());
  for (auto& [name, w] : st.workflows) {
    if (!w.run) continue;
    for (bool changed = true; changed;) {
      changed = false;
      for (int32_t s = 0; s < w.run->num_stages(); ++s) {
        if (w.run->state(s) != workload::StageState::kSubmitted) continue;
        auto id = r.JobByName(JobOf(w, s));
        if (!id.ok()) continue;
        const scheduler::JobRecord* rec = sched->Find(*id);
        if (rec == nullptr || !job::IsTerminal(rec->state)) continue;
        changed = true;
        if (rec->state == job::JobState::kCancelled) {
          w.run->StageCancelled(s);
        } else if (w.run->StageEnded(s, rec->state == job::JobState::kSucceeded) ==
                   workload::WorkflowRun::After::kRetry) {
          BERTH_RETURN_IF_ERROR(SubmitStage(r, w, s));
        }
      }
      for (int32_t s : w.run->TakeReady()) {
        changed = true;
        BERTH_RETURN_IF_ERROR(SubmitStage(r, w, s));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

void RegisterScenarioWorkflowCommands(ScenarioRunner& runner) {
  auto st = std::make_shared<WorkflowState>();
  // stage WORKFLOW NAME [depends=a,b] [after=success|any] [retries=N] [artifact=PATH] [job and group keys]
  runner.AddCommand("stage", [st](Runner&, Args& a) -> Status {
    if (a.words().size() != 2)
      return InvalidArgument("usage: stage WORKFLOW NAME [depends=a,b] [after=success|any] [retries=N] [job keys]");
    ScenarioWorkflow& w = st->workflows[a.words()[0]];
    if (w.run) return FailedPrecondition("workflow '" + a.words()[0] + "' has started: stages come before");
    w.spec.name = a.words()[0];
    workload::StageSpec s;
    s.name = a.words()[1];
    s.job.name = s.name;
    s.job.groups.push_back({});  // the real spec is checked when `submit` runs it
    std::vector<std::string> rest;
    for (ScenarioArgs::Pair& p : a.pairs()) {
      p.used = true;
      if (p.key == "depends") {
        size_t start = 0;
        while (start <= p.value.size()) {
          size_t comma = p.value.find(',', start);
          if (comma == std::string::npos) comma = p.value.size();
          if (comma > start) s.depends_on.push_back(p.value.substr(start, comma - start));
          start = comma + 1;
        }
      } else if (p.key == "after") {
        if (p.value != "success" && p.value != "any") return InvalidArgument("after must be success or any");
        s.after = p.value == "any" ? workload::StageCondition::kAny : workload::StageCondition::kSuccess;
      } else if (p.key == "retries") {
        s.retries = std::atoi(p.value.c_str());
      } else if (p.key == "artifact") {
        s.artifact = p.value;
      } else if (p.key == "job") {
        return InvalidArgument("a stage's job is named WORKFLOW/STAGE: drop job=");
      } else {
        rest.push_back(p.key + std::string(1, p.op) + p.value);
      }
    }
    w.spec.stages.push_back(std::move(s));
    w.submit_args.push_back(std::move(rest));
    return Status::Ok();
  });
  runner.AddCommand("start-workflow", [st](Runner& r, Args& a) -> Status {
    if (a.words().size() != 1) return InvalidArgument("usage: start-workflow WORKFLOW");
    auto it = st->workflows.find(a.words()[0]);
    if (it == st->workflows.end()) return InvalidArgument("no workflow '" + a.words()[0] + "' (declare its stages)");
    ScenarioWorkflow& w = it->second;
    if (w.run) return FailedPrecondition("workflow '" + w.spec.name + "' already started");
    BERTH_RETURN_IF_ERROR(workload::ValidateWorkflow(w.spec));
    w.run = std::make_unique<workload::WorkflowRun>(w.spec);
    BERTH_RETURN_IF_ERROR(r.Sched().status());
    return Status::Ok();  // the after-command step submits the ready stages
  });
  runner.AddCommand("cancel-workflow", [st](Runner& r, Args& a) -> Status {
    if (a.words().size() != 1) return InvalidArgument("usage: cancel-workflow WORKFLOW");
    auto it = st->workflows.find(a.words()[0]);
    if (it == st->workflows.end() || !it->second.run) return InvalidArgument("no started workflow '" + a.words()[0] + "'");
    ScenarioWorkflow& w = it->second;
    std::vector<std::string> jobs;
    for (int32_t s = 0; s < w.run->num_stages(); ++s)
      if (w.run->state(s) == workload::StageState::kSubmitted) jobs.push_back(JobOf(w, s));
    w.run->Cancel();
    for (const auto& j : jobs) BERTH_RETURN_IF_ERROR(r.RunCommand({"finish", j, "state=cancelled"}));
    return Status::Ok();
  });
  // expect workflow WORKFLOW STATE [STAGE=STATE ...]
  runner.AddExpectation("workflow", [st](Runner&, Args& a) -> Status {
    if (a.words().size() != 2) return InvalidArgument("usage: expect workflow WORKFLOW STATE [STAGE=STATE ...]");
    auto it = st->workflows.find(a.words()[0]);
    if (it == st->workflows.end() || !it->second.run) return InvalidArgument("no started workflow '" + a.words()[0] + "'");
    const ScenarioWorkflow& w = it->second;
    const std::string state = workload::WorkflowStateName(w.run->state());
    if (state != a.words()[1]) return FailedPrecondition("workflow " + w.spec.name + " is " + state + ", not " + a.words()[1]);
    for (ScenarioArgs::Pair& p : a.pairs()) {
      p.used = true;
      int32_t s = -1;
      for (int32_t i = 0; i < w.run->num_stages(); ++i)
        if (w.spec.stages[i].name == p.key) s = i;
      if (s < 0) return InvalidArgument("workflow " + w.spec.name + " has no stage '" + p.key + "'");
      std::string got = workload::StageStateName(w.run->state(s));
      if (w.run->attempts(s) > 1) got += "#" + std::to_string(w.run->attempts(s));
      if (got != p.value && workload::StageStateName(w.run->state(s)) != p.value)
        return FailedPrecondition("stage " + p.key + " is " + got + ", not " + p.value);
    }
    return Status::Ok();
  });
  runner.AddAfterCommandHook([st](Runner& r) { return Step(r, *st); });
}

}  // namespace berth::testing
