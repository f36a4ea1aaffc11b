// Score plugin "random": the FGD paper's Random baseline. One feasible node,
// drawn uniformly with the cycle's generator, scores 100 and every other 0
// (done in Normalize, which sees all feasible nodes at once). A share takes a
// uniformly random GPU among those with enough free milli; whole-GPU tasks
// take the default (lowest-index completely free GPUs). The scheduler keeps
// the feasible nodes per task class (class_score_cache.h), so the draw needs
// no scan and makes the scan's choice.
#include "berth/cluster/cluster.h"
#include "berth/plugins/builtin.h"
#include "berth/plugins/score/score_util.h"

namespace berth::plugins {
namespace {

class Random final : public framework::ScorePlugin {
 public:
  static constexpr std::string_view kName = "random";
  std::string_view Name() const override { return kName; }
  int64_t Score(const framework::CycleContext&, const framework::TaskRequest&, NodeId) const override { return 0; }
  // Normalize below is the draw UniformPick promises, so the scheduler draws
  // from its per-class count of feasible nodes instead of a scan.
  bool UniformPick() const override { return true; }
  void Normalize(const framework::CycleContext& ctx, const framework::TaskRequest&, std::span<const NodeId> nodes,
                 std::span<int64_t> scores) const override {
    if (scores.empty()) return;
    for (auto& s : scores) s = 0;
    scores[ctx.rng.Uniform(scores.size())] = 100;
  }
  std::optional<uint64_t> SelectGpus(const framework::CycleContext& ctx, const framework::TaskRequest& req,
                                     NodeId node) const override {
    if (!req.is_sharing()) return std::nullopt;
    const int32_t count = ctx.state.cluster().node(node).gpu_count;
    int32_t fitting = 0;
    for (int32_t g = 0; g < count; ++g) fitting += ctx.state.GpuHolds(node, g, req.milli_per_gpu, req.gpu_memory_mib);
    if (fitting == 0) return std::nullopt;
    int64_t pick = static_cast<int64_t>(ctx.rng.Uniform(static_cast<uint64_t>(fitting)));
    for (int32_t g = 0; g < count; ++g) {
      if (!ctx.state.GpuHolds(node, g, req.milli_per_gpu, req.gpu_memory_mib)) continue;
      if (pick-- == 0) return uint64_t{1} << g;
    }
    return std::nullopt;
  }
};

}  // namespace

Status RegisterRandomPlugin(framework::PluginRegistry& r) {
  return r.Register(std::string(Random::kName), SimpleFactory<Random>());
}

}  // namespace berth::plugins
