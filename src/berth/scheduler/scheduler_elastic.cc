// Elastic jobs in the scheduler: pending sizes, shrinking and growing a
// running job, shrinking victims instead of evicting them, growing them back
// (docs/adr/0016).
#include "berth/scheduler/scheduler.h"

#include <algorithm>
#include <bit>
#include <cassert>

namespace berth::scheduler {

using framework::CycleContext;
using framework::TaskPlacement;
using framework::TaskRequest;
using framework::Verdict;
using job::JobState;

Status Scheduler::SetPendingSize(JobId id, int32_t tasks) {
  const int32_t* it = index_of_.Find(id);
  if (it == nullptr) return NotFound("no job " + std::to_string(id.value()));
  const int32_t index = *it;
  JobRecord& rec = jobs_[index];
  if (rec.state != JobState::kPending) return FailedPrecondition("job " + std::to_string(id.value()) + " is not pending");
  if (!rec.spec.elastic()) return FailedPrecondition("job " + std::to_string(id.value()) + " is not elastic");
  if (tasks < rec.spec.elastic_min() || tasks > rec.spec.max_workers)
    return InvalidArgument("job " + std::to_string(id.value()) + ": size " + std::to_string(tasks) + " is outside " +
                           std::to_string(rec.spec.elastic_min()) + ".." + std::to_string(rec.spec.max_workers));
  job::TaskGroup& g = rec.spec.groups.front();
  if (g.count == tasks && g.min_count < 0) return Status::Ok();
  const bool queued = std::find(pending_.begin(), pending_.end(), index) != pending_.end();
  if (queued) RemovePending(index);
  g.count = tasks;
  g.min_count = -1;
  rec.requested_tasks = tasks;
  ComputeDemand(index);
  if (queued) Enqueue(index);
  return Status::Ok();
}

Status Scheduler::ShrinkTo(int32_t index, int32_t tasks, std::string_view why) {
  JobRecord& rec = jobs_[index];
  const TimeUs now = clock_.Now();
  const int32_t from = static_cast<int32_t>(rec.placements.size());
  const framework::RunningJob& run = running_jobs_[running_pos_[index]];
  rec.work_done += std::max<TimeUs>(0, now - run.run_start);  // re-sharded from a checkpoint taken now
  RunEnded(index, now, /*completed=*/false);
  // Highest task indexes go first; the rest keep their GPUs.
  std::sort(rec.placements.begin(), rec.placements.end(),
            [](const TaskPlacement& a, const TaskPlacement& b) { return a.task.index < b.task.index; });
  while (static_cast<int32_t>(rec.placements.size()) > tasks) {
    BERTH_RETURN_IF_ERROR(ApplyChecked(state::ReleaseTask{rec.placements.back().task}));
    rec.placements.pop_back();
  }
  // Renumber so that task indexes stay 0..tasks-1.
  for (int32_t k = 0; k < tasks; ++k) {
    if (rec.placements[k].task.index == k) continue;
    const state::Allocation a = rec.placements[k].alloc;
    BERTH_RETURN_IF_ERROR(ApplyChecked(state::ReleaseTask{rec.placements[k].task}));
    rec.placements[k].task.index = k;
    BERTH_RETURN_IF_ERROR(ApplyChecked(state::PlaceTask{rec.placements[k].task, a}));
  }
  job::TaskGroup& g = rec.spec.groups.front();
  g.count = tasks;
  g.min_count = -1;
  rec.start_time = now;
  rec.startup_delay = std::max<TimeUs>(0, rec.spec.resize_cost);
  ++rec.resizes;
  ++rec.alloc_version;
  bucket_count_valid_ = false;
  RunStarted(index, now);
  log_.Resized(now, rec.spec.id, from, tasks, why);
  return Status::Ok();
}

Status Scheduler::Resize(JobId id, int32_t tasks, std::string_view why) {
  const int32_t* it = index_of_.Find(id);
  if (it == nullptr) return NotFound("no job " + std::to_string(id.value()));
  return ResizeIndex(*it, tasks, why, /*requested=*/true);
}

Status Scheduler::ResizeIndex(int32_t index, int32_t tasks, std::string_view why, bool requested) {
  JobRecord& rec = jobs_[index];
  const JobId id = rec.spec.id;
  if (rec.state != JobState::kRunning) return FailedPrecondition("job " + std::to_string(id.value()) + " is not running");
  if (!rec.spec.elastic()) return FailedPrecondition("job " + std::to_string(id.value()) + " is not elastic");
  if (tasks < rec.spec.elastic_min() || tasks > rec.spec.max_workers)
    return InvalidArgument("job " + std::to_string(id.value()) + ": size " + std::to_string(tasks) + " is outside " +
                           std::to_string(rec.spec.elastic_min()) + ".." + std::to_string(rec.spec.max_workers));
  const int32_t from = static_cast<int32_t>(rec.placements.size());
  if (requested) rec.requested_tasks = tasks;
  if (tasks == from) return Status::Ok();
  if (tasks < from) return ShrinkTo(index, tasks, why);
  // Growth: release the gang, place it again at the new size; on failure put
  // the old placement back (it fits: nothing else changed).
  const TimeUs now = clock_.Now();
  const std::vector<TaskPlacement> old = rec.placements;
  const job::TaskGroup old_group = rec.spec.groups.front();
  const TimeUs old_start = rec.start_time, old_delay = rec.startup_delay, old_work = rec.work_done;
  const framework::RunningJob& run = running_jobs_[running_pos_[index]];
  const TimeUs worked = std::max<TimeUs>(0, now - run.run_start);
  RunEnded(index, now, /*completed=*/false);
  for (const auto& p : rec.placements) BERTH_RETURN_IF_ERROR(ApplyChecked(state::ReleaseTask{p.task}));
  rec.placements.clear();
  job::TaskGroup& g = rec.spec.groups.front();
  g.count = tasks;  // the group's count is the job's current size
  g.min_count = -1;
  bucket_count_valid_ = false;
  Verdict v = TryPlace(rec);
  if (!v.ok()) {
    rec.spec.groups.front() = old_group;
    for (const auto& p : old) BERTH_RETURN_IF_ERROR(ApplyChecked(state::PlaceTask{p.task, p.alloc}));
    rec.placements = old;
    rec.start_time = old_start;
    rec.startup_delay = old_delay;
    rec.work_done = old_work;
    // The run goes on unchanged: restore its running view and ledger charge.
    RunStarted(index, now);
    rec.attained_gpu_seconds -= static_cast<double>(running_jobs_[running_pos_[index]].milli_gpu) / kMilliPerGpu *
                                UsToSeconds(now - old_start);
    return FailedPrecondition("job " + std::to_string(id.value()) + ": cannot grow to " + std::to_string(tasks) +
                              " workers now: " + v.reason);
  }
  rec.work_done = old_work + worked;
  rec.start_time = now;
  rec.startup_delay = std::max<TimeUs>(0, rec.spec.resize_cost);
  ++rec.resizes;
  ++rec.alloc_version;
  RunStarted(index, now);
  log_.Resized(now, rec.spec.id, from, tasks, why);
  log_.Placed(now, cluster_, rec.spec.id, rec.placements);
  return Status::Ok();
}

bool Scheduler::ShrinkForJob(int32_t index, std::span<const JobId> victims, std::vector<JobId>& evict) {
  JobRecord& rec = jobs_[index];
  // Rigid victims are evicted first; the elastic ones then give up workers
  // one at a time (highest ranks first) until the job fits.
  std::vector<int32_t> elastic;
  for (JobId v : victims) {
    const int32_t vi = *index_of_.Find(v);
    const JobRecord& vr = jobs_[vi];
    if (vr.spec.elastic() && static_cast<int32_t>(vr.placements.size()) > vr.spec.elastic_min()) {
      elastic.push_back(vi);
    } else {
      evict.push_back(v);
    }
  }
  if (elastic.empty()) return false;
  for (JobId v : evict) {
    Status s = Evict(*index_of_.Find(v), rec.spec.id, /*defer_requeue=*/true);
    assert(s.ok());
    (void)s;
  }
  evict.clear();
  bucket_count_valid_ = false;
  for (int32_t vi : elastic) {
    JobRecord& vr = jobs_[vi];
    while (static_cast<int32_t>(vr.placements.size()) > vr.spec.elastic_min()) {
      Status s = ShrinkTo(vi, static_cast<int32_t>(vr.placements.size()) - 1, "shrunk for job " + std::to_string(rec.spec.id.value()));
      assert(s.ok());
      (void)s;
      if (std::find(shrunk_.begin(), shrunk_.end(), vi) == shrunk_.end()) shrunk_.push_back(vi);
      bucket_count_valid_ = false;
      if (TryPlace(rec).ok()) {
        ++vr.shrinks;
        return true;
      }
    }
    ++vr.shrinks;
  }
  // Still short: the shrunk jobs go too.
  for (int32_t vi : elastic) evict.push_back(jobs_[vi].spec.id);
  return false;
}

void Scheduler::GrowShrunk() {
  if (!options_.elastic_resize || shrunk_.empty() || !pending_.empty()) return;
  std::vector<int32_t> still;
  for (int32_t vi : shrunk_) {
    JobRecord& vr = jobs_[vi];
    if (vr.state != JobState::kRunning) continue;
    if (static_cast<int32_t>(vr.placements.size()) >= vr.requested_tasks) continue;
    Status s = ResizeIndex(vi, vr.requested_tasks, "capacity freed", /*requested=*/false);
    if (!s.ok()) still.push_back(vi);
  }
  shrunk_ = std::move(still);
}

}  // namespace berth::scheduler
