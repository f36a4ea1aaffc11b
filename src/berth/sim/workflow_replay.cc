// Workflow stages as held jobs of a replay.
#include "berth/sim/workflow_replay.h"

#include <algorithm>

namespace berth::sim {

WorkflowReplay ExpandWorkflows(const Trace& input) {
  WorkflowReplay w;
  w.trace.jobs = input.jobs;
  w.trace.report = input.report;
  w.trace.format = input.format;
  w.trace.time_origin = input.time_origin;
  w.held.assign(input.jobs.size(), 0);
  w.of_job.assign(input.jobs.size(), {});
  w.service_stage.assign(input.jobs.size(), 0);
  // Stage jobs take ids after every id of the input (and every index, which
  // stands for an unset id).
  int64_t next_id = static_cast<int64_t>(input.jobs.size());
  for (const auto& j : input.jobs)
    if (j.id.valid()) next_id = std::max(next_id, j.id.value() + 1);
  for (size_t wi = 0; wi < input.workflows.size(); ++wi) {
    const workload::WorkflowSpec& spec = input.workflows[wi];
    w.runs.emplace_back(spec);
    workload::WorkflowRun& run = w.runs.back();
    auto& stages = w.job_of.emplace_back(spec.stages.size());
    for (int32_t s = 0; s < run.num_stages(); ++s) {
      for (int32_t a = 1; a <= spec.stages[s].retries + 1; ++a) {
        job::JobSpec j = run.StageJob(s);
        j.env["BERTH_STAGE_ATTEMPT"] = std::to_string(a);
        const bool service = j.service.has_value();
        if (service) {  // its replicas, placed together
          if (!j.groups.empty()) j.groups[0].count = std::max(1, j.service->replicas);
          j.service.reset();
        }
        w.service_stage.push_back(service ? 1 : 0);
        if (a > 1) j.name += "#" + std::to_string(a);
        j.submit_time = spec.submit_time;
        j.id = JobId(next_id++);
        stages[s].push_back(static_cast<int32_t>(w.trace.jobs.size()));
        w.trace.jobs.push_back(std::move(j));
        w.held.push_back(1);
        w.of_job.push_back({static_cast<int32_t>(wi), s, a});
      }
    }
    for (int32_t s : run.TakeReady()) w.held[stages[s][0]] = 0;
    w.ended_at.push_back(-1);
  }
  return w;
}

bool WorkflowReplay::Fails(int32_t i) const {
  const Attempt& a = of_job[i];
  if (a.workflow < 0) return false;
  return a.attempt <= runs[a.workflow].spec().stages[a.stage].fail_attempts;
}

std::vector<int32_t> WorkflowReplay::JobEnded(int32_t i, bool succeeded, TimeUs t) {
  std::vector<int32_t> released;
  const Attempt a = of_job[i];
  if (a.workflow < 0) return released;
  workload::WorkflowRun& run = runs[a.workflow];
  auto release = [&](int32_t k) {
    held[k] = 0;
    trace.jobs[k].submit_time = t;
    released.push_back(k);
  };
  if (run.StageEnded(a.stage, succeeded) == workload::WorkflowRun::After::kRetry) {
    release(job_of[a.workflow][a.stage][run.attempts(a.stage) - 1]);
  } else {
    for (int32_t s : run.TakeReady()) release(job_of[a.workflow][s][0]);
  }
  if (run.ended() && ended_at[a.workflow] < 0) ended_at[a.workflow] = t;
  return released;
}

std::vector<int32_t> WorkflowReplay::JobStarted(int32_t i, TimeUs t) {
  std::vector<int32_t> released;
  const Attempt a = of_job[i];
  if (a.workflow < 0 || !service_stage[i]) return released;
  workload::WorkflowRun& run = runs[a.workflow];
  if (run.state(a.stage) != workload::StageState::kSubmitted) return released;  // a restart after preemption
  (void)run.StageEnded(a.stage, true);
  for (int32_t s : run.TakeReady()) {
    const int32_t k = job_of[a.workflow][s][0];
    held[k] = 0;
    trace.jobs[k].submit_time = t;
    released.push_back(k);
  }
  if (run.ended() && ended_at[a.workflow] < 0) ended_at[a.workflow] = t;
  return released;
}

WorkflowFigures WorkflowReplay::Figures() const {
  WorkflowFigures f;
  std::vector<double> done;
  for (size_t w = 0; w < runs.size(); ++w) {
    ++f.total;
    switch (runs[w].state()) {
      case workload::WorkflowState::kSucceeded: ++f.succeeded; break;
      case workload::WorkflowState::kFailed: ++f.failed; break;
      default: ++f.unfinished; break;
    }
    if (ended_at[w] >= 0) done.push_back(UsToSeconds(ended_at[w] - runs[w].spec().submit_time));
  }
  f.completion_s = Summarize(std::move(done));
  return f;
}

}  // namespace berth::sim
