// The "topology" plan plugin: places a gang of whole-GPU tasks at once, in
// the narrowest topology domain that holds it (see gang_planner.h).
//
// "topology-reliable" is the same plan, and for long, large gangs it tries
// the candidate domains with the fewest recent failures first
// (failure_history.h; the fault handler feeds the history). A gang counts
// when it asks for at least `min_gpus` GPUs (default 64) and declares no
// runtime limit or one of at least `min_runtime_s` (default 21600, 6 h);
// failures weigh 2^-(age / half_life_s) (default 604800, 7 days).
#include "berth/plugins/builtin.h"
#include "berth/plugins/queue_sort/sort_util.h"
#include "berth/plugins/score/score_util.h"
#include "berth/plugins/topology/failure_history.h"
#include "berth/plugins/topology/gang_planner.h"

namespace berth::plugins {
namespace {

struct Reliability {
  int64_t min_gpus = 64;
  TimeUs min_runtime = 6 * 3600 * kUsPerSecond;
  TimeUs half_life = 7 * 24 * 3600 * kUsPerSecond;
};

class TopologyPlan final : public framework::PlanPlugin, public FailureAware {
 public:
  static constexpr std::string_view kName = "topology";
  static constexpr std::string_view kReliableName = "topology-reliable";
  TopologyPlan() : history_(0) {}
  explicit TopologyPlan(Reliability r) : reliable_(true), rel_(r), history_(r.half_life) {}
  std::string_view Name() const override { return reliable_ ? kReliableName : kName; }
  FailureHistory& failure_history() override { return history_; }
  void Counters(framework::PluginCounters& out) const override {
    if (!reliable_) return;
    out.push_back({std::string(kReliableName) + ".failures_recorded", history_.recorded()});
    out.push_back({std::string(kReliableName) + ".long_large_gangs_planned", static_cast<double>(steered_)});
  }
  framework::PlanOutcome Plan(const framework::CycleContext& ctx) override {
    framework::PlanOutcome out;
    if (!GangPlanner::Applies(ctx.job)) return out;
    const bool avoid = reliable_ && history_.recorded() > 0 && ctx.job.total_gpus() >= rel_.min_gpus &&
                       (ctx.job.runtime_limit < 0 || ctx.job.runtime_limit >= rel_.min_runtime);
    const cluster::Cluster& c = ctx.state.cluster();
    const TimeUs now = ctx.now;
    const GangPlanner::DomainRisk risk = [&](DomainId d) {
      const cluster::Domain& dom = c.domain(d);
      return history_.Risk(dom.begin.value(), dom.end.value(), now);
    };
    planner_.set_domain_risk(avoid ? &risk : nullptr);
    GangPlanResult r = planner_.Plan(ctx.state, ctx.job);
    planner_.set_domain_risk(nullptr);
    if (avoid && r.ok) ++steered_;
    if (!r.ok) {
      out.kind = framework::PlanOutcome::Kind::kRejected;
      int64_t need = 0;
      for (const auto& g : ctx.job.groups) need += int64_t{g.gang_min()} * g.gpus;
      const auto cap = ctx.job.required_level.value_or(cluster::Level::kRegion);
      out.verdict = need > ctx.state.cluster().max_domain_gpus(cap)
                        ? framework::Verdict::Unresolvable(std::string(kName), "the gang needs " + std::to_string(need) +
                                                                  " GPUs; no " + cluster::LevelName(cap) +
                                                                  " domain has that many")
                        : framework::Verdict::Unschedulable(std::string(kName), r.reason);
      // A group required within a level narrower than any domain of it can hold.
      for (const auto& g : ctx.job.groups) {
        const int64_t group_need = int64_t{g.gang_min()} * g.gpus;
        if (g.required_level && group_need > ctx.state.cluster().max_domain_gpus(*g.required_level)) {
          out.verdict = framework::Verdict::Unresolvable(
              std::string(kName), "group '" + g.name + "' needs " + std::to_string(group_need) + " GPUs; no " +
                                      cluster::LevelName(*g.required_level) + " domain has that many");
          break;
        }
      }
      return out;
    }
    out.kind = framework::PlanOutcome::Kind::kPlanned;
    out.allocs = std::move(r.allocs);
    out.task_index = std::move(r.task_index);
    out.note = std::string("within ") + cluster::LevelName(r.level) + " " + ctx.state.cluster().domain(r.domain).name;
    if (avoid) out.note += " (failure-aware)";
    return out;
  }

 private:
  GangPlanner planner_;  // scratch space reused across cycles
  bool reliable_ = false;
  Reliability rel_;
  FailureHistory history_;
  int64_t steered_ = 0;  // long, large gangs planned with the failure-aware order
};

StatusOr<std::unique_ptr<framework::Plugin>> MakeReliable(const framework::PluginArgs& args) {
  constexpr std::string_view kKnown[] = {"min_gpus", "min_runtime_s", "half_life_s"};
  BERTH_RETURN_IF_ERROR(queue_sort::CheckArgs(args, TopologyPlan::kReliableName, kKnown));
  Reliability r;
  BERTH_ASSIGN_OR_RETURN(double gpus, queue_sort::ArgNumber(args, TopologyPlan::kReliableName, "min_gpus", 64));
  BERTH_ASSIGN_OR_RETURN(double runtime, queue_sort::ArgNumber(args, TopologyPlan::kReliableName, "min_runtime_s", 21600));
  BERTH_ASSIGN_OR_RETURN(double half, queue_sort::ArgNumber(args, TopologyPlan::kReliableName, "half_life_s", 604800));
  if (!(half > 0)) return InvalidArgument("plugin 'topology-reliable': arg 'half_life_s' must be positive");
  r.min_gpus = static_cast<int64_t>(gpus);
  r.min_runtime = SecondsToUs(runtime);
  r.half_life = SecondsToUs(half);
  return std::unique_ptr<framework::Plugin>(std::make_unique<TopologyPlan>(r));
}

}  // namespace

Status RegisterTopologyPlugins(framework::PluginRegistry& r) {
  BERTH_RETURN_IF_ERROR(r.Register(std::string(TopologyPlan::kName), SimpleFactory<TopologyPlan>()));
  return r.Register(std::string(TopologyPlan::kReliableName), framework::PluginRegistry::Factory(MakeReliable));
}

}  // namespace berth::plugins
