// What happens to running jobs from outside the scheduling pass: failures
// (interrupt, in-place repair, checkpoints), adoption of placements made
// elsewhere, task releases, and nodes or GPUs going down and up.
#include "berth/scheduler/scheduler.h"

#include <algorithm>
#include <bit>
#include <cassert>

#include "berth/common/bits.h"

namespace berth::scheduler {

using framework::CycleContext;
using framework::TaskPlacement;
using framework::TaskRequest;
using framework::Verdict;
using job::JobState;

// A run stopped by a fault keeps its work up to its last checkpoint (or up to
// now when a checkpoint is taken first, as before maintenance); the rest is
// lost to the failure.
void Scheduler::KeepWorkUntilCheckpoint(JobRecord& rec, const framework::RunningJob& run, TimeUs now,
                                        bool checkpoint_now) {
  const TimeUs saved_at = checkpoint_now ? std::max(now, run.run_start) : run.LastCheckpoint(now);
  rec.work_done += saved_at - run.run_start;
  if (!checkpoint_now) rec.failure_lost_gpu_seconds += run.LostGpuSeconds(now);
}

Status Scheduler::Interrupt(JobId id, TimeUs restart_cost, bool checkpoint_now) {
  const int32_t* it = index_of_.Find(id);
  if (it == nullptr) return NotFound("no job " + std::to_string(id.value()));
  const int32_t index = *it;
  JobRecord& rec = jobs_[index];
  if (rec.state != JobState::kRunning)
    return FailedPrecondition("job " + std::to_string(id.value()) + " is not running");
  const TimeUs now = clock_.Now();
  const framework::RunningJob& run = running_jobs_[running_pos_[index]];
  KeepWorkUntilCheckpoint(rec, run, now, checkpoint_now);
  rec.recovery_gpu_seconds += static_cast<double>(run.milli_gpu) / kMilliPerGpu * UsToSeconds(restart_cost);
  ++rec.restarts;
  for (auto* a : framework_->admit()) a->OnFinish(rec.spec);
  RunEnded(index, now, /*completed=*/false);
  for (const auto& p : rec.placements) BERTH_RETURN_IF_ERROR(ApplyChecked(state::ReleaseTask{p.task}));
  rec.placements.clear();
  --running_;
  log_.Finished(now, id, "failed-requeued");
  rec.state = JobState::kPending;
  rec.enqueue_time = now;
  rec.startup_delay = restart_cost;
  Enqueue(index);
  return Status::Ok();
}

Status Scheduler::RepairTask(JobId id, int32_t task_index, const state::Allocation& alloc, TimeUs repair_cost,
                             bool checkpoint_now) {
  const int32_t* it = index_of_.Find(id);
  if (it == nullptr) return NotFound("no job " + std::to_string(id.value()));
  const int32_t index = *it;
  JobRecord& rec = jobs_[index];
  if (rec.state != JobState::kRunning)
    return FailedPrecondition("job " + std::to_string(id.value()) + " is not running");
  auto p = std::find_if(rec.placements.begin(), rec.placements.end(),
                        [&](const TaskPlacement& t) { return t.task.index == task_index; });
  if (p == rec.placements.end())
    return NotFound("job " + std::to_string(id.value()) + " has no placement for task " + std::to_string(task_index));
  const TimeUs now = clock_.Now();
  const state::Allocation old = p->alloc;
  BERTH_RETURN_IF_ERROR(ApplyChecked(state::ReleaseTask{p->task}));
  if (Status s = ApplyChecked(state::PlaceTask{p->task, alloc}); !s.ok()) {
    BERTH_RETURN_IF_ERROR(ApplyChecked(state::PlaceTask{p->task, old}));
    return s;
  }
  auto milli = [](const state::Allocation& a) { return int64_t{PopCount(a.gpu_mask)} * a.milli_per_gpu; };
  const GpuTypeId old_type = cluster_.node(old.node).gpu_type, new_type = cluster_.node(alloc.node).gpu_type;
  const int64_t old_charge = ledger_.Amount(rec.spec, old_type, milli(old));
  const int64_t new_charge = ledger_.Amount(rec.spec, new_type, milli(alloc));
  ++epoch_;
  if (milli(old) > 0) ledger_.Charge(rec.queue, old_type, -old_charge, now, -milli(old));
  if (milli(alloc) > 0) ledger_.Charge(rec.queue, new_type, new_charge, now, milli(alloc));
  p->alloc = alloc;
  framework::RunningJob& run = running_jobs_[running_pos_[index]];
  rec.attained_charge_seconds +=
      static_cast<double>(old_charge - new_charge) / kMilliPerGpu * UsToSeconds(now - rec.start_time);
  rec.charge += new_charge - old_charge;
  run.charge = rec.charge;
  const int64_t old_ref = RefAmount(rec, old_type, milli(old)), new_ref = RefAmount(rec, new_type, milli(alloc));
  rec.attained_ref_seconds += static_cast<double>(old_ref - new_ref) / kMilliPerGpu * UsToSeconds(now - rec.start_time);
  rec.ref_charge += new_ref - old_ref;
  KeepWorkUntilCheckpoint(rec, run, now, checkpoint_now);
  rec.attained_gpu_seconds += static_cast<double>(milli(old) - milli(alloc)) / kMilliPerGpu *
                              UsToSeconds(now - rec.start_time);  // the moved task's service so far stays counted
  run.milli_gpu += milli(alloc) - milli(old);
  if (alloc.gpu_mask != 0 && alloc.milli_per_gpu != kMilliPerGpu) run.shares = true;
  rec.recovery_gpu_seconds += static_cast<double>(run.milli_gpu) / kMilliPerGpu * UsToSeconds(repair_cost);
  ++rec.repairs;
  run.run_start = std::max(now, run.run_start) + repair_cost;
  run.work_done = rec.work_done;
  run.placements = rec.placements;
  rec.startup_delay = run.run_start - rec.start_time;
  log_.Placed(now, cluster_, id, std::span<const TaskPlacement>(&*p, 1));
  return Status::Ok();
}

Status Scheduler::Adopt(JobId id, std::span<const TaskPlacement> placements, TimeUs start_time) {
  const int32_t* it = index_of_.Find(id);
  if (it == nullptr) return NotFound("no job " + std::to_string(id.value()));
  const int32_t index = *it;
  JobRecord& rec = jobs_[index];
  if (rec.state != JobState::kPending) return FailedPrecondition("job " + std::to_string(id.value()) + " is not pending");
  if (placements.empty()) return InvalidArgument("job " + std::to_string(id.value()) + ": no placements to adopt");
  const int32_t num_tasks = rec.spec.num_tasks();
  // Undoes what was applied so far (no reserve plugin ran for it).
  auto undo = [&] {
    for (auto p = rec.placements.rbegin(); p != rec.placements.rend(); ++p) (void)ApplyChecked(state::ReleaseTask{p->task});
    rec.placements.clear();
  };
  for (const auto& p : placements) {
    if (p.task.job != id || p.task.index < 0 || p.task.index >= num_tasks) {
      undo();
      return InvalidArgument("job " + std::to_string(id.value()) + ": placement of task " +
                             std::to_string(p.task.index) + " does not belong to it");
    }
    Status s = ApplyChecked(state::PlaceTask{p.task, p.alloc});
    if (!s.ok()) {
      undo();
      return s;
    }
    rec.placements.push_back(p);
  }
  RemovePending(index);
  rec.state = JobState::kRunning;
  rec.start_time = start_time;
  if (rec.first_start_time < 0) rec.first_start_time = start_time;
  rec.last_verdict = Verdict::Success();
  ++running_;
  RunStarted(index, clock_.Now());
  for (auto* a : framework_->admit()) a->OnStart(rec.spec);
  log_.Placed(clock_.Now(), cluster_, rec.spec.id, rec.placements);
  return Status::Ok();
}

Status Scheduler::ReleaseTask(JobId id, int32_t task_index, JobState final_state) {
  const int32_t* it = index_of_.Find(id);
  if (it == nullptr) return NotFound("no job " + std::to_string(id.value()));
  const int32_t index = *it;
  JobRecord& rec = jobs_[index];
  if (!job::IsTerminal(final_state)) return InvalidArgument("ReleaseTask needs a terminal state");
  if (rec.state != JobState::kRunning)
    return FailedPrecondition("job " + std::to_string(id.value()) + " is not running");
  auto p = std::find_if(rec.placements.begin(), rec.placements.end(),
                        [&](const TaskPlacement& t) { return t.task.index == task_index; });
  if (p == rec.placements.end())
    return NotFound("job " + std::to_string(id.value()) + " has no placement for task " + std::to_string(task_index));
  if (rec.placements.size() == 1) return Finish(id, final_state);
  const TimeUs now = clock_.Now();
  BERTH_RETURN_IF_ERROR(ApplyChecked(state::ReleaseTask{p->task}));
  const int64_t milli = int64_t{PopCount(p->alloc.gpu_mask)} * p->alloc.milli_per_gpu;
  const GpuTypeId type = cluster_.node(p->alloc.node).gpu_type;
  const int64_t charge = ledger_.Amount(rec.spec, type, milli);
  ++epoch_;
  if (milli > 0) ledger_.Charge(rec.queue, type, -charge, now, -milli);
  // The task's share of attained service, then the running view shrinks.
  framework::RunningJob& run = running_jobs_[running_pos_[index]];
  rec.attained_charge_seconds += static_cast<double>(charge) / kMilliPerGpu * UsToSeconds(now - rec.start_time);
  rec.charge -= charge;
  run.charge = rec.charge;
  const int64_t ref = RefAmount(rec, type, milli);
  rec.attained_ref_seconds += static_cast<double>(ref) / kMilliPerGpu * UsToSeconds(now - rec.start_time);
  rec.ref_charge -= ref;
  rec.attained_gpu_seconds += static_cast<double>(milli) / kMilliPerGpu * UsToSeconds(now - rec.start_time);
  run.milli_gpu -= milli;
  rec.placements.erase(p);
  run.placements = rec.placements;
  return Status::Ok();
}

Status Scheduler::SetNodeUp(NodeId node, bool up) { return ApplyChecked(state::SetNodeUp{node, up}); }
Status Scheduler::SetGpuUp(NodeId node, int32_t gpu, bool up) { return ApplyChecked(state::SetGpuUp{node, gpu, up}); }

}  // namespace berth::scheduler
