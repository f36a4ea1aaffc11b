// The benchmark fill: seeded arrivals to the target, then churn.
#include "bench_fill.h"

#include <chrono>

namespace berth::bench {

job::JobSpec GpuJob(int64_t id, int32_t gpus) {
  job::JobSpec j;
  j.id = JobId(id);
  job::TaskGroup g;
  g.gpus = gpus;
  g.cpu_milli = int64_t{12000} * gpus;
  g.memory_mib = int64_t{96 * 1024} * gpus;
  j.groups.push_back(std::move(g));
  return j;
}

namespace {

int32_t DrawGpus(Rng& rng, const FillOptions& o) {
  static const int32_t kGpus[4] = {1, 2, 4, 8};
  int64_t x = static_cast<int64_t>(rng.Uniform(100));
  for (int i = 0; i < 4; ++i) {
    if (x < o.mix[i]) return kGpus[i];
    x -= o.mix[i];
  }
  return 1;
}

// Submits random jobs until the target is reached. A job that does not fit
// (rare: only when the drawn size finds no hole) is cancelled, not retried.
Status FillTo(Bed& bed, int64_t target_milli, const FillOptions& o) {
  auto& s = *bed.sched;
  while (s.state().allocated_milli() < target_milli) {
    const JobId id(bed.next_id++);
    const int32_t gpus = DrawGpus(bed.rng, o);
    BERTH_RETURN_IF_ERROR(s.Submit(GpuJob(id.value(), gpus)));
    s.Schedule();
    if (s.Find(id)->state == job::JobState::kRunning) {
      bed.running.push_back({id, gpus});
    } else {
      BERTH_RETURN_IF_ERROR(s.Finish(id, job::JobState::kCancelled));
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Bed>> MakeBed(const cluster::Cluster& cluster, const framework::Profile& profile,
                                       const framework::PluginRegistry& plugins, const FillOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  auto bed = std::make_unique<Bed>();
  bed->rng.Seed(o.seed);
  BERTH_ASSIGN_OR_RETURN(std::unique_ptr<framework::Framework> fw, framework::Framework::Create(profile, plugins));
  scheduler::SchedulerOptions so;
  so.seed = o.seed;
  bed->sched = std::make_unique<scheduler::Scheduler>(cluster, std::move(fw), so, bed->clock);
  const int64_t target = static_cast<int64_t>(o.target * static_cast<double>(cluster.total_milli_gpu()));
  BERTH_RETURN_IF_ERROR(FillTo(*bed, target, o));
  for (int64_t d = 0; d < o.churn && !bed->running.empty(); ++d) {
    bed->clock.Advance(1);
    const size_t k = bed->rng.Uniform(bed->running.size());
    BERTH_RETURN_IF_ERROR(bed->sched->Finish(bed->running[k].id, job::JobState::kSucceeded));
    bed->running[k] = bed->running.back();
    bed->running.pop_back();
    BERTH_RETURN_IF_ERROR(FillTo(*bed, target, o));
  }
  if (bed->sched->pending_count() != 0) return Internal("fill left jobs pending");
  for (const RunningJob& r : bed->running)
    if (r.gpus == 1) bed->singles.push_back(r.id);
  bed->fill_hash = bed->sched->log().HashHex();
  bed->fill_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return bed;
}

StatusOr<SharedFill> MakeSharedFill(const cluster::Cluster& cluster, const framework::PolicyRegistry& policies,
                                    const framework::PluginRegistry& plugins, const FillOptions& options) {
  SharedFill f;
  f.cluster = &cluster;
  BERTH_ASSIGN_OR_RETURN(framework::Profile p, policies.Find("binpack"));
  BERTH_ASSIGN_OR_RETURN(std::unique_ptr<Bed> bed, MakeBed(cluster, p, plugins, options));
  for (const RunningJob& j : bed->running) {
    const scheduler::JobRecord* rec = bed->sched->Find(j.id);
    f.jobs.push_back(rec->spec);
    f.placements.push_back(rec->placements);
  }
  f.next_id = bed->next_id;
  f.hash = bed->fill_hash;
  f.seconds = bed->fill_seconds;
  return f;
}

StatusOr<std::unique_ptr<Bed>> AdoptFill(const SharedFill& f, const std::string& policy,
                                         const framework::PolicyRegistry& policies,
                                         const framework::PluginRegistry& plugins, bool full_scan) {
  BERTH_ASSIGN_OR_RETURN(framework::Profile p, policies.Find(policy));
  const framework::PluginContext ctx{f.cluster, f.jobs};
  BERTH_ASSIGN_OR_RETURN(std::unique_ptr<framework::Framework> fw, framework::Framework::Create(p, plugins, ctx));
  auto bed = std::make_unique<Bed>();
  bed->rng.Seed(42);
  scheduler::SchedulerOptions so;
  so.seed = 42;
  so.full_scan = full_scan;
  bed->sched = std::make_unique<scheduler::Scheduler>(*f.cluster, std::move(fw), so, bed->clock);
  for (size_t i = 0; i < f.jobs.size(); ++i) {
    BERTH_RETURN_IF_ERROR(bed->sched->Submit(f.jobs[i]));
    BERTH_RETURN_IF_ERROR(bed->sched->Adopt(f.jobs[i].id, f.placements[i], 0));
    int32_t gpus = 0;
    for (const auto& g : f.jobs[i].groups) gpus += g.count * g.gpus;
    bed->running.push_back({f.jobs[i].id, gpus});
    if (gpus == 1) bed->singles.push_back(f.jobs[i].id);
  }
  bed->next_id = f.next_id;
  bed->fill_hash = f.hash;
  bed->fill_seconds = f.seconds;
  return bed;
}

}  // namespace berth::bench
