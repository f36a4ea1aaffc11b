// Score plugin "fgd": Fragmentation Gradient Descent (Weng et al., ATC'23), as
// the original simulator scores (pkg/simulator/plugin/fgd_score.go there).
//
// The node that grows the cluster's fragmentation least wins. With F the
// measure of fragmentation.h, n the node now and n' the node after placing:
//   score = trunc(100 * sigmoid((F(n) - F(n')) / 1000))   (50: no change)
// A GPU-sharing task is tried on every GPU i with enough free milli (n_i: CPU
// and that GPU reduced); the node scores the best s_i, and the GPU that won
// (lowest index on ties) is the one SelectGpus returns. Other tasks: n' takes
// the CPU and `gpus` GPUs, chosen in ascending free milli (stable by index);
// their GPUs are the lowest-index free ones (the scheduler's default).
//
// Built from the workload the driver supplies (PluginContext::workload): its
// typical pods define F. Args: "typical_coverage_percent" (default 95).
//
// Speed: F(n) only changes when node n does, and a task's score on n depends
// only on n's state and the task's shape (CPU, milli, GPU count), so both are
// cached per node and stamped with ClusterState::node_version(n). GPUs with
// equal free milli give equal scores, so each free value is tried once.
#include <cmath>
#include <memory>
#include <optional>

#include "berth/common/csv.h"
#include "berth/plugins/builtin.h"
#include "berth/plugins/fgd/delta_score.h"
#include "berth/plugins/fgd/fragmentation.h"

namespace berth::plugins {
namespace {

// trunc(100 * sigmoid(delta / 1000)), in the original's operation order.
int32_t SigmoidScore(double delta) {
  const double x = delta / 1000.0;
  const double sigmoid = 1.0 / (1.0 + std::exp(-x));
  return static_cast<int32_t>(sigmoid * 100.0);
}

class FgdScore final : public DeltaScorePlugin {
 public:
  static constexpr std::string_view kName = "fgd";
  explicit FgdScore(fgd::FragModel model) : model_(std::move(model)) {}
  std::string_view Name() const override { return kName; }

 protected:
  double NodeMeasure(const state::ClusterState& state, NodeId n) const override { return model_.NodeFrag(state, n); }
  double Measure(std::span<const MilliGpu> free, MilliCpu cpu, GpuTypeId type) const override {
    return model_.NodeFrag(free, cpu, type);
  }
  int64_t ToScore(double drop) const override { return SigmoidScore(drop); }
  // A task that requests nothing scores the maximum, as in the original.
  std::optional<int64_t> EmptyTaskScore() const override { return 100; }

 private:
  fgd::FragModel model_;
};

}  // namespace

Status RegisterFgdPlugins(framework::PluginRegistry& r) {
  framework::PluginRegistry::ContextFactory factory =
      [](const framework::PluginArgs& args,
         const framework::PluginContext& ctx) -> StatusOr<std::unique_ptr<framework::Plugin>> {
    const std::shared_ptr<const framework::WorkloadFacts> facts = framework::FactsOf(ctx);
    if (ctx.cluster == nullptr || !facts)
      return FailedPrecondition(
          "plugin 'fgd' needs the workload's typical pods, but this driver supplies no workload up front");
    int64_t coverage = 95;
    if (auto it = args.find("typical_coverage_percent"); it != args.end()) {
      if (!ParseInt64(it->second, coverage).ok() || coverage < 1 || coverage > 100)
        return InvalidArgument("plugin 'fgd': typical_coverage_percent must be an integer in 1..100, not '" +
                               it->second + "'");
    }
    fgd::TypicalPods typical = fgd::ComputeTypicalPods(*facts, static_cast<int>(coverage));
    return std::unique_ptr<framework::Plugin>(std::make_unique<FgdScore>(fgd::FragModel(typical, *ctx.cluster)));
  };
  return r.Register(std::string(FgdScore::kName), std::move(factory));
}

}  // namespace berth::plugins
