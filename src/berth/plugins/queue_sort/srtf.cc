// srtf: shortest remaining time first, preemptive (as Helios' SRTF).
//
// Order: remaining = runtime - work_done, where runtime is the job's declared
// limit if it has one, else its true duration when the driver knows it (an
// oracle in simulation); jobs of unknown runtime last; ties by submission
// order (seq). work_done is what checkpoints saved before an eviction.
//
// Preemption (post-filter, same instance): a job that cannot start may evict
// running jobs whose remaining time now (runtime - work_done - time worked in
// this run) is strictly longer than its own; the longest remaining go first,
// newest first on ties, and the set is pruned to a minimal one (see
// PlanVictimsInOrder). An evictee loses the work since its last checkpoint.
// Guards (OrderPreemption in sort_util.h): only jobs that checkpoint, that
// have run min_runtime_s (600) in their run, and that did not evict the
// waiting job last; arg `preempt` ("true" by default) turns the post-filter
// off.
#include <array>
#include <memory>

#include "berth/plugins/builtin.h"
#include "berth/plugins/queue_sort/sort_util.h"

namespace berth::plugins::queue_sort {
namespace {

using framework::QueuedJob;

constexpr TimeUs kUnknown = INT64_MAX;

TimeUs Remaining(const job::JobSpec& spec, TimeUs work_done) {
  const TimeUs runtime = DeclaredRuntime(spec);
  if (runtime < 0) return kUnknown;
  return std::max<TimeUs>(0, runtime - work_done);
}

class Srtf final : public framework::QueueSortPlugin, public framework::PostFilterPlugin {
 public:
  static constexpr std::string_view kName = "srtf";
  explicit Srtf(OrderPreemption preemption) : preemption_(preemption) {}
  std::string_view Name() const override { return kName; }

  bool Less(const QueuedJob& a, const QueuedJob& b) const override {
    const TimeUs ra = Remaining(*a.spec, a.work_done), rb = Remaining(*b.spec, b.work_done);
    if (ra != rb) return ra < rb;
    return a.seq < b.seq;
  }

  std::optional<framework::PreemptionPlan> PostFilter(const framework::PreemptContext& ctx) override {
    if (!preemption_.preempt) return std::nullopt;
    const TimeUs mine = Remaining(ctx.job, ctx.queued.work_done);
    if (mine == kUnknown) return std::nullopt;
    const TimeUs now = ctx.view.now;
    candidates_.clear();
    remaining_.resize(ctx.view.running.size());
    for (size_t i = 0; i < ctx.view.running.size(); ++i) {
      const framework::RunningJob& r = ctx.view.running[i];
      if (!preemption_.Evictable(r, ctx)) continue;
      const TimeUs total = Remaining(*r.spec, r.work_done);
      const TimeUs left = total == kUnknown ? kUnknown : std::max<TimeUs>(0, total - std::max<TimeUs>(0, now - r.run_start));
      remaining_[i] = left;
      if (left > mine) candidates_.push_back(static_cast<int32_t>(i));
    }
    const auto& running = ctx.view.running;
    std::sort(candidates_.begin(), candidates_.end(), [&](int32_t a, int32_t b) {
      if (remaining_[a] != remaining_[b]) return remaining_[a] > remaining_[b];
      return running[a].seq > running[b].seq;
    });
    return PlanVictimsInOrder(ctx, candidates_, "srtf: shorter remaining time");
  }

 private:
  OrderPreemption preemption_;
  std::vector<int32_t> candidates_;  // scratch
  std::vector<TimeUs> remaining_;    // scratch, per running job
};

}  // namespace

Status RegisterSrtf(framework::PluginRegistry& r) {
  return r.Register(std::string(Srtf::kName),
                    [](const framework::PluginArgs& args) -> StatusOr<std::unique_ptr<framework::Plugin>> {
                      static constexpr std::array<std::string_view, 3> kKnown = {"preempt", "evict_uncheckpointed",
                                                                                 "min_runtime_s"};
                      BERTH_RETURN_IF_ERROR(CheckArgs(args, Srtf::kName, kKnown));
                      BERTH_ASSIGN_OR_RETURN(OrderPreemption preemption, ArgOrderPreemption(args, Srtf::kName));
                      return std::unique_ptr<framework::Plugin>(std::make_unique<Srtf>(preemption));
                    });
}

}  // namespace berth::plugins::queue_sort
