// Score plugin "berth-frag": place a task where it adds the least expected
// waste W (waste_model.h: look-ahead fragmentation plus CPU stranding).
//
//   score(task, n) = round(1000 * (W(n) - W(n')))   n': n after the task
//
// i.e. the exact change in milli-GPU, to 0.001 milli (FGD truncates a sigmoid
// of its change to an integer 0..100, so most nodes tie and the random node
// rank decides; here ties are rare and still go to the lowest rank). A
// GPU-sharing task is tried on each GPU it fits (one GPU per distinct free
// amount); the node scores its best GPU, which SelectGpus returns (lowest
// index on ties). Other tasks: n' takes `gpus` GPUs in ascending free milli
// (stable by index) that fit, which for whole GPUs are the lowest-index free
// ones the scheduler picks.
//
// Built from the workload the driver supplies (PluginContext::workload): its
// typical pods and its CPU per GPU. Args: "typical_coverage_percent" (default
// 95, as FGD), "lookahead" (true|false, default true), "cpu_weight" (>= 0,
// default 1). The defaults are the policy; the others exist to measure what
// each part contributes (docs/results/berth-frag.md).
//
// Speed: as the fgd plugin, W(n) and each (task shape, node) outcome are
// cached and stamped with ClusterState::node_version(n).
#include <cmath>
#include <memory>

#include "berth/common/csv.h"
#include "berth/plugins/builtin.h"
#include "berth/plugins/fgd/delta_score.h"
#include "berth/plugins/frag/waste_model.h"

namespace berth::plugins {
namespace {

class FragScore final : public DeltaScorePlugin {
 public:
  static constexpr std::string_view kName = "berth-frag";
  explicit FragScore(frag::WasteModel model) : model_(std::move(model)) {}
  std::string_view Name() const override { return kName; }

 protected:
  double NodeMeasure(const state::ClusterState& state, NodeId n) const override {
    return model_.NodeWaste(state, n);
  }
  double Measure(std::span<const MilliGpu> free, MilliCpu cpu, GpuTypeId type) const override {
    return model_.NodeWaste(free, cpu, type);
  }
  // Waste removed, in units of 0.001 milli-GPU.
  int64_t ToScore(double waste_removed) const override { return std::llround(waste_removed * 1000.0); }

 private:
  frag::WasteModel model_;
};

StatusOr<frag::WasteModelOptions> ParseOptions(const framework::PluginArgs& args, int64_t& coverage) {
  frag::WasteModelOptions o;
  coverage = 95;
  for (const auto& [key, value] : args) {
    if (key == "typical_coverage_percent") {
      if (!ParseInt64(value, coverage).ok() || coverage < 1 || coverage > 100)
        return InvalidArgument("plugin 'berth-frag': typical_coverage_percent must be an integer in 1..100, not '" +
                               value + "'");
    } else if (key == "lookahead") {
      if (value != "true" && value != "false")
        return InvalidArgument("plugin 'berth-frag': lookahead must be true or false, not '" + value + "'");
      o.lookahead = value == "true";
    } else if (key == "cpu_weight") {
      if (!ParseDouble(value, o.cpu_weight).ok() || !(o.cpu_weight >= 0) || !std::isfinite(o.cpu_weight))
        return InvalidArgument("plugin 'berth-frag': cpu_weight must be a number >= 0, not '" + value + "'");
    } else if (key != "weight") {
      return InvalidArgument("plugin 'berth-frag': unknown arg '" + key + "'");
    }
  }
  return o;
}

}  // namespace

Status RegisterFragPlugins(framework::PluginRegistry& r) {
  framework::PluginRegistry::ContextFactory factory =
      [](const framework::PluginArgs& args,
         const framework::PluginContext& ctx) -> StatusOr<std::unique_ptr<framework::Plugin>> {
    const std::shared_ptr<const framework::WorkloadFacts> facts = framework::FactsOf(ctx);
    if (ctx.cluster == nullptr || !facts)
      return FailedPrecondition(
          "plugin 'berth-frag' needs the workload's typical pods, but this driver supplies no workload up front");
    int64_t coverage = 95;
    BERTH_ASSIGN_OR_RETURN(frag::WasteModelOptions options, ParseOptions(args, coverage));
    const fgd::TypicalPods typical = fgd::ComputeTypicalPods(*facts, static_cast<int>(coverage));
    return std::unique_ptr<framework::Plugin>(std::make_unique<FragScore>(
        frag::WasteModel(typical, frag::CpuPerGpuMilli(*facts), *ctx.cluster, options)));
  };
  return r.Register(std::string(FragScore::kName), std::move(factory));
}

}  // namespace berth::plugins
