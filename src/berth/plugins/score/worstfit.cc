// Score plugin "worstfit": spread. The mirror of "bestfit": the node left with
// the most CPU and GPU after placement wins,
//   raw = trunc(100 * [0.5 (cpu_free - cpu_req) / 128000 + 0.5 (gpu_free - gpu_req) / 8000])
// in milli units, then min-max normalized over the feasible nodes. A share
// takes the fitting GPU with the most free milli (lowest index on ties), so
// shares spread over GPUs as tasks spread over nodes. Not one of the FGD
// paper's baselines. For the index search a tier's bound is the score with
// the most CPU and GPU the tier's nodes may have free (the raw score only
// grows with them; min-max keeps the best node).
#include "berth/cluster/cluster.h"
#include "berth/plugins/builtin.h"
#include "berth/plugins/score/score_util.h"

namespace berth::plugins {
namespace {

class WorstFit final : public framework::ScorePlugin {
 public:
  static constexpr std::string_view kName = "worstfit";
  std::string_view Name() const override { return kName; }
  static int64_t Raw(int64_t cpu_left_milli, int64_t gpu_left_milli) {
    const double cpu_left = static_cast<double>(cpu_left_milli);
    const double gpu_left = static_cast<double>(gpu_left_milli);
    return static_cast<int64_t>(100.0 * (0.5 * cpu_left / kMaxSpecCpu + 0.5 * gpu_left / kMaxSpecGpu));
  }
  int64_t Score(const framework::CycleContext& ctx, const framework::TaskRequest& req, NodeId n) const override {
    return Raw(ctx.state.free_cpu(n) - req.cpu_milli, ctx.state.node_free_milli(n) - req.total_milli());
  }
  std::optional<int64_t> ScoreBound(const framework::CycleContext&, const framework::TaskRequest& req,
                                    const framework::NodeTier& tier) const override {
    return Raw(tier.cpu_hi - req.cpu_milli, tier.node_free_hi - req.total_milli());
  }
  void Normalize(const framework::CycleContext&, const framework::TaskRequest&, std::span<const NodeId>,
                 std::span<int64_t> scores) const override {
    MinMaxNormalize(scores);
  }
  std::optional<uint64_t> SelectGpus(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                                     NodeId node) const override {
    if (!req.is_sharing()) return std::nullopt;
    const int32_t count = ctx.state.cluster().node(node).gpu_count;
    const MilliGpu* free = ctx.state.gpu_free_array(node);
    int32_t best = -1;
    for (int32_t g = 0; g < count; ++g)
      if (ctx.state.GpuHolds(node, g, req.milli_per_gpu, req.gpu_memory_mib) && (best < 0 || free[g] > free[best]))
        best = g;
    if (best < 0) return std::nullopt;
    return uint64_t{1} << best;
  }
};

}  // namespace

Status RegisterWorstFitPlugin(framework::PluginRegistry& r) {
  return r.Register(std::string(WorstFit::kName), SimpleFactory<WorstFit>());
}

}  // namespace berth::plugins
