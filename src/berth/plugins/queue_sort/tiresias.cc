// tiresias: discretized two-dimensional least-attained-service (2D-LAS,
// Tiresias, NSDI'19), preemptive.
//
// Service: a job's attained GPU-time (GPUs held x time, over all its runs),
// counted since its last promotion (see below). Queues: with thresholds
// T1 < T2 < ... (arg `thresholds_gpu_h`, GPU-hours; default "5", i.e. two
// queues split at 18,000 GPU-seconds as in the Tiresias re-implementation of
// the Helios simulator), a job with service s is in queue k = the number of
// thresholds <= s: new jobs start in queue 0. Order: lower queue first, then
// submission order (seq) within a queue (FIFO, as Tiresias).
//
// Starvation guard (Tiresias' STARVELIMIT, arg `promote_after`, default 8;
// 0 = off): a waiting job in queue k > 0 whose wait since it last ran
// (now - enqueue time) reaches promote_after x its executed time (service
// since the last promotion / its GPUs) moves to queue 0: its service restarts
// from zero there, as Tiresias resets executed_time. The plugin is Dynamic:
// Prepare reads `now` at each pass; promotions are remembered per job. The
// default 8 is one of the Tiresias simulator's settings (dlas-gpu-8); at 2,
// long jobs cycle through promotion and eviction on a loaded cluster
// (docs/results/tenancy.md).
//
// Preemption (post-filter, same instance; arg `preempt`, default true): a job
// that cannot start may evict running jobs in a strictly higher queue (less
// priority), highest queue first and newest first within it, as few as fit
// (PlanVictimsInOrder). Tiresias assumes an evicted job keeps its progress:
// jobs that never checkpoint are not evicted (arg `evict_uncheckpointed`,
// default false), since they would restart from scratch and, demoted again,
// be evicted again; nor jobs that have run less than min_runtime_s (600) in
// their run, nor the job that evicted the waiting one last (sort_util.h). Jobs of the same queue never evict each other, so a
// running job keeps its GPUs against later jobs of its own queue (Tiresias
// schedules running jobs ahead of pending ones within a queue). Queues are
// re-evaluated at each scheduling pass, i.e. at the driver's events: a running
// job that crosses a threshold between events is demoted at the next pass.
#include <algorithm>
#include <array>
#include <memory>
#include <unordered_map>

#include "berth/plugins/builtin.h"
#include "berth/plugins/queue_sort/sort_util.h"

namespace berth::plugins::queue_sort {
namespace {

using framework::QueuedJob;

class Tiresias final : public framework::QueueSortPlugin, public framework::PostFilterPlugin {
 public:
  static constexpr std::string_view kName = "tiresias";
  Tiresias(std::vector<double> thresholds_gpu_s, double promote_after, OrderPreemption preemption)
      : thresholds_(std::move(thresholds_gpu_s)), promote_after_(promote_after), preemption_(preemption) {}
  std::string_view Name() const override { return kName; }

  bool Dynamic() const override { return true; }
  void Prepare(const tenancy::Ledger&, TimeUs now) override { now_ = now; }

  bool Less(const QueuedJob& a, const QueuedJob& b) const override {
    const int la = WaitingLevel(a), lb = WaitingLevel(b);
    if (la != lb) return la < lb;
    return a.seq < b.seq;
  }

  std::optional<framework::PreemptionPlan> PostFilter(const framework::PreemptContext& ctx) override {
    if (!preemption_.preempt || thresholds_.empty()) return std::nullopt;
    const int mine = WaitingLevel(ctx.queued);
    if (mine >= static_cast<int>(thresholds_.size())) return std::nullopt;  // the last queue evicts nobody
    const auto& running = ctx.view.running;
    candidates_.clear();
    level_.resize(running.size());
    for (size_t i = 0; i < running.size(); ++i) {
      const framework::RunningJob& r = running[i];
      level_[i] = 0;
      if (!preemption_.Evictable(r, ctx)) continue;
      const double now_service =
          r.attained_gpu_seconds +
          static_cast<double>(r.milli_gpu) / kMilliPerGpu * UsToSeconds(std::max<TimeUs>(0, ctx.view.now - r.start_time));
      level_[i] = Level(Service(r.spec->id, now_service));
      if (level_[i] > mine) candidates_.push_back(static_cast<int32_t>(i));
    }
    if (candidates_.empty()) return std::nullopt;
    std::sort(candidates_.begin(), candidates_.end(), [&](int32_t a, int32_t b) {
      if (level_[a] != level_[b]) return level_[a] > level_[b];
      return running[a].seq > running[b].seq;
    });
    return PlanVictimsInOrder(ctx, candidates_, "tiresias: 2D-LAS queue " + std::to_string(mine) + " before higher");
  }

  void Counters(framework::PluginCounters& out) const override {
    out.emplace_back("tiresias.promotions", static_cast<double>(promotions_));
  }

 private:
  int Level(double service_gpu_s) const {
    return static_cast<int>(std::upper_bound(thresholds_.begin(), thresholds_.end(), service_gpu_s) -
                            thresholds_.begin());
  }
  // Service since the last promotion.
  double Service(JobId id, double attained) const {
    if (promoted_at_.empty()) return attained;
    auto it = promoted_at_.find(id);
    return it == promoted_at_.end() ? attained : std::max(0.0, attained - it->second);
  }
  // The queue of a waiting job; promotes it when it has starved. A promotion
  // makes the job's service 0, so the level is 0 before and after it is
  // recorded: the order stays consistent within a sort.
  int WaitingLevel(const QueuedJob& q) const {
    const double service = Service(q.spec->id, q.attained_gpu_seconds);
    const int level = Level(service);
    if (level == 0 || promote_after_ <= 0) return level;
    const double executed_s = service / JobGpus(*q.spec);
    const double waited_s = UsToSeconds(now_ - q.enqueue_time);
    if (waited_s < promote_after_ * executed_s) return level;
    promoted_at_[q.spec->id] = q.attained_gpu_seconds;
    ++promotions_;
    return 0;
  }

  std::vector<double> thresholds_;  // GPU-seconds, increasing
  double promote_after_ = 0;
  OrderPreemption preemption_;
  TimeUs now_ = 0;
  // Per promoted job: its attained service at the promotion. Looked up, never iterated.
  mutable std::unordered_map<JobId, double> promoted_at_;
  mutable int64_t promotions_ = 0;
  std::vector<int32_t> candidates_;  // scratch
  std::vector<int> level_;           // scratch, per running job
};

}  // namespace

Status RegisterTiresias(framework::PluginRegistry& r) {
  return r.Register(std::string(Tiresias::kName),
                    [](const framework::PluginArgs& args) -> StatusOr<std::unique_ptr<framework::Plugin>> {
                      static constexpr std::array<std::string_view, 5> kKnown = {
                          "thresholds_gpu_h", "promote_after", "preempt", "evict_uncheckpointed", "min_runtime_s"};
                      BERTH_RETURN_IF_ERROR(CheckArgs(args, Tiresias::kName, kKnown));
                      BERTH_ASSIGN_OR_RETURN(std::vector<double> hours,
                                             ArgIncreasingList(args, Tiresias::kName, "thresholds_gpu_h", {5.0}));
                      BERTH_ASSIGN_OR_RETURN(double promote, ArgNumber(args, Tiresias::kName, "promote_after", 8));
                      BERTH_ASSIGN_OR_RETURN(OrderPreemption preemption, ArgOrderPreemption(args, Tiresias::kName));
                      for (double& h : hours) h *= 3600.0;
                      return std::unique_ptr<framework::Plugin>(std::make_unique<Tiresias>(std::move(hours), promote, preemption));
                    });
}

}  // namespace berth::plugins::queue_sort
