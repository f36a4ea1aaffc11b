// Allocation-dependent progress of jobs in the replay.
#include "berth/sim/elastic_progress.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "berth/common/bits.h"

namespace berth::sim {

ProgressTracker::ProgressTracker(const Trace& trace, std::span<const JobId> ids)
    : trace_(trace), ids_(ids) {
  const size_t n = trace.jobs.size();
  // The per-job arrays exist only when some job is tracked: a replay of
  // millions of jobs with fixed durations pays nothing for them.
  auto model_of = [&](const job::JobSpec& j) { return trace.goodput ? trace.goodput->Find(j.job_class) : nullptr; };
  for (size_t i = 0; i < n; ++i) {
    const job::JobSpec& j = trace.jobs[i];
    if (model_of(j) != nullptr || (j.elastic() && j.duration >= 0)) tracked_.push_back(static_cast<int32_t>(i));
  }
  if (tracked_.empty()) return;
  model_.assign(n, nullptr);
  tracks_.assign(n, 0);
  prog_.resize(n);
  chosen_batch_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) model_[i] = model_of(trace.jobs[i]);
  for (int32_t i : tracked_) tracks_[i] = 1;
}

int32_t ProgressTracker::DefaultBatch(int32_t i, int32_t gpus, int32_t nodes) const {
  if (chosen_batch_[i] > 0) return chosen_batch_[i];
  const job::JobSpec& j = trace_.jobs[i];
  if (j.batch_size > 0) return j.batch_size;
  return model_[i] ? model_[i]->BestBatch(gpus, nodes, prog_[i].done) : 0;
}

double ProgressTracker::Advance(int32_t i, const Prog& p, double seconds) const {
  if (model_[i]) return model_[i]->ProgressAfter(p.done, p.gpus, p.nodes, p.batch, seconds);
  const job::JobSpec& j = trace_.jobs[i];
  const double full = std::max(1, j.groups.front().count);
  return std::min(UsToSeconds(j.duration), p.done + seconds * p.gpus / j.groups.front().gpus / full);
}

double ProgressTracker::SecondsLeft(int32_t i, const Prog& p) const {
  if (model_[i]) return model_[i]->SecondsToFinish(p.done, p.gpus, p.nodes, p.batch);
  const job::JobSpec& j = trace_.jobs[i];
  const double rate = static_cast<double>(p.gpus) / j.groups.front().gpus / std::max(1, j.groups.front().count);
  const double left = std::max(0.0, UsToSeconds(j.duration) - p.done);
  return rate > 0 ? left / rate : HUGE_VAL;
}

void ProgressTracker::Settle(int32_t i, TimeUs t) {
  Prog& p = prog_[i];
  if (!p.running || t <= p.since) return;
  p.done = Advance(i, p, UsToSeconds(t - p.since));
  p.since = t;
}

void ProgressTracker::Retime(int32_t i, TimeUs t, const PushCompletion& push) {
  const Prog& p = prog_[i];
  const double left = SecondsLeft(i, p);
  if (!std::isfinite(left)) return;  // cannot run on this allocation: it holds GPUs until resized
  push(i, std::max(p.since, t) + static_cast<TimeUs>(std::ceil(left * 1e6)));
}

void ProgressTracker::Sync(TimeUs t, const FindRecord& find, const PushCompletion& push) {
  for (int32_t i : tracked_) {
    const scheduler::JobRecord* rec = find(i);
    if (rec == nullptr) continue;
    Prog& p = prog_[i];
    if (rec->alloc_version == p.version) continue;
    Settle(i, t);
    p.version = rec->alloc_version;
    p.running = rec->state == job::JobState::kRunning;
    if (!p.running) continue;
    p.gpus = 0;
    std::vector<int32_t> nodes;
    for (const auto& pl : rec->placements) {
      p.gpus += PopCount(pl.alloc.gpu_mask);
      nodes.push_back(pl.alloc.node.value());
    }
    std::sort(nodes.begin(), nodes.end());
    p.nodes = static_cast<int32_t>(std::unique(nodes.begin(), nodes.end()) - nodes.begin());
    p.batch = DefaultBatch(i, p.gpus, p.nodes);
    p.since = rec->start_time + rec->startup_delay;
    Retime(i, t, push);
  }
}

void ProgressTracker::SetBatch(int32_t i, int32_t batch, TimeUs t, const FindRecord& find, const PushCompletion& push) {
  if (batch <= 0 || !model_[i]) return;
  chosen_batch_[i] = batch;
  Prog& p = prog_[i];
  const scheduler::JobRecord* rec = find(i);
  if (!p.running || rec == nullptr || rec->alloc_version != p.version || p.batch == batch) return;
  Settle(i, t);
  p.batch = batch;
  Retime(i, t, push);
}

std::vector<framework::ElasticJob> ProgressTracker::ElasticJobs(TimeUs t, const FindRecord& find,
                                                                std::span<const int32_t> route, int32_t part) const {
  std::vector<framework::ElasticJob> out;
  for (int32_t i : tracked_) {
    if (route[i] != part) continue;
    const scheduler::JobRecord* rec = find(i);
    if (rec == nullptr || !rec->spec.elastic()) continue;
    if (rec->state != job::JobState::kRunning && rec->state != job::JobState::kPending) continue;
    const Prog& p = prog_[i];
    framework::ElasticJob e;
    e.spec = &rec->spec;
    e.running = rec->state == job::JobState::kRunning;
    e.workers = e.running ? p.gpus : 0;
    e.nodes = e.running ? p.nodes : 0;
    e.batch = e.running ? p.batch : DefaultBatch(i, 1, 1);
    e.progress = p.done;
    if (p.running && t > p.since) e.progress = Advance(i, p, UsToSeconds(t - p.since));
    e.submit_time = rec->spec.submit_time;
    e.resizes = rec->resizes + rec->preemptions;
    out.push_back(e);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.spec->id < b.spec->id; });
  return out;
}

}  // namespace berth::sim
