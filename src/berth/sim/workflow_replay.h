// Workflows in a replay: every stage attempt a workflow may need becomes a job
// of the replayed trace up front, held back until the workflow core
// (workload::WorkflowRun) releases it, so the replay loop stays one loop over
// jobs indexed by trace position. docs/workflows.md, "Simulation".
//
//   WorkflowReplay w = ExpandWorkflows(trace);   // w.trace: jobs + stage attempts
//   if (!w.held[i]) arrive(i);                   // root stages arrive at the workflow's submit time
//   job i ends at t: for (int32_t k : w.JobEnded(i, succeeded, t)) arrive k at t
//   w.Fails(i): the attempt ends failed (the stage's fail_attempts)
//
// A service stage runs in a replay as one job of its `replicas` replicas
// (the replica shape; spread limits and autoscaling are not modelled) for its
// duration_s (none: to the end); the stage succeeds, and releases the stages
// after it, when that job starts (is deployed), as in the service.
//
// Figures: a workflow's completion time is the end of its last stage minus
// its submit time, over workflows that end (succeeded or failed); stage
// attempts never released (skipped stages, retries not needed) are not jobs
// of the run and count nowhere.
#pragma once

#include <cstdint>
#include <vector>

#include "berth/sim/result.h"
#include "berth/sim/trace.h"
#include "berth/workload/workflow.h"

namespace berth::sim {

struct WorkflowReplay {
  Trace trace;                // the input's jobs, then every stage attempt
  std::vector<uint8_t> held;  // per job: waits for its release (never arrives by itself)
  std::vector<workload::WorkflowRun> runs;

  // Job i ended at t. Returns the jobs released now (their submit time is set
  // to t), in workflow then stage order.
  std::vector<int32_t> JobEnded(int32_t i, bool succeeded, TimeUs t);
  // Job i started at t. A service stage (kind: service) succeeds once its
  // replicas are placed: returns the jobs that releases, as JobEnded does;
  // nothing for any other job.
  std::vector<int32_t> JobStarted(int32_t i, TimeUs t);
  // Whether job i is a stage attempt the spec makes fail.
  bool Fails(int32_t i) const;
  bool released(int32_t i) const { return !held[i]; }
  // Completion figures over the runs.
  WorkflowFigures Figures() const;

  struct Attempt {
    int32_t workflow = -1, stage = -1, attempt = 0;  // attempt from 1
  };
  std::vector<Attempt> of_job;  // per job (workflow -1: a plain job)
  std::vector<std::vector<std::vector<int32_t>>> job_of;  // [workflow][stage][attempt - 1]
  std::vector<TimeUs> ended_at;  // per workflow, -1 while running
  std::vector<uint8_t> service_stage;  // per job: the attempt of a service stage (its replicas as one job)
};

// The expansion of `input` (its jobs keep their indexes and ids).
WorkflowReplay ExpandWorkflows(const Trace& input);

}  // namespace berth::sim
