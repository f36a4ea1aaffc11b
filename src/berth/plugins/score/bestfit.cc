// Score plugins "bestfit" (the FGD paper's BestFit: the node left with the
// least CPU and GPU after placement wins) and "firstfit" (all equal: the
// lowest-ranked feasible node wins).
//
// BestFit, as the original simulator computes it:
//   raw = trunc(100 * (1 - [0.5 (cpu_free - cpu_req) / 128000 + 0.5 (gpu_free - gpu_req) / 8000]))
// with milli units, then min-max normalized over the feasible nodes.
#include <cmath>

#include "berth/plugins/builtin.h"
#include "berth/plugins/score/score_util.h"

namespace berth::plugins {
namespace {

class BestFit final : public framework::ScorePlugin {
 public:
  static constexpr std::string_view kName = "bestfit";
  std::string_view Name() const override { return kName; }
  int64_t Score(const framework::CycleContext& ctx, const framework::TaskRequest& req, NodeId n) const override {
    const double cpu_left = static_cast<double>(ctx.state.free_cpu(n) - req.cpu_milli);
    const double gpu_left = static_cast<double>(ctx.state.node_free_milli(n) - req.total_milli());
    const double waste = 0.5 * cpu_left / 128000.0 + 0.5 * gpu_left / 8000.0;
    return static_cast<int64_t>(100.0 * (1.0 - waste));
  }
  void Normalize(const framework::CycleContext&, const framework::TaskRequest&, std::span<const NodeId>,
                 std::span<int64_t> scores) const override {
    MinMaxNormalize(scores);
  }
};

class FirstFit final : public framework::ScorePlugin {
 public:
  static constexpr std::string_view kName = "firstfit";
  std::string_view Name() const override { return kName; }
  int64_t Score(const framework::CycleContext&, const framework::TaskRequest&, NodeId) const override { return 0; }
};

}  // namespace

Status RegisterBestFitPlugins(framework::PluginRegistry& r) {
  BERTH_RETURN_IF_ERROR(r.Register(std::string(BestFit::kName), SimpleFactory<BestFit>()));
  BERTH_RETURN_IF_ERROR(r.Register(std::string(FirstFit::kName), SimpleFactory<FirstFit>()));
  return Status::Ok();
}

}  // namespace berth::plugins
