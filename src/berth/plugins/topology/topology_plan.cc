// The "topology" plan plugin: places a gang of whole-GPU tasks at once, in
// the narrowest topology domain that holds it (see gang_planner.h).
#include "berth/plugins/builtin.h"
#include "berth/plugins/score/score_util.h"
#include "berth/plugins/topology/gang_planner.h"

namespace berth::plugins {
namespace {

class TopologyPlan final : public framework::PlanPlugin {
 public:
  static constexpr std::string_view kName = "topology";
  std::string_view Name() const override { return kName; }
  framework::PlanOutcome Plan(const framework::CycleContext& ctx) override {
    framework::PlanOutcome out;
    if (!GangPlanner::Applies(ctx.job)) return out;
    GangPlanResult r = planner_.Plan(ctx.state, ctx.job);
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
    return out;
  }

 private:
  GangPlanner planner_;  // scratch space reused across cycles
};

}  // namespace

Status RegisterTopologyPlugins(framework::PluginRegistry& r) {
  return r.Register(std::string(TopologyPlan::kName), SimpleFactory<TopologyPlan>());
}

}  // namespace berth::plugins
