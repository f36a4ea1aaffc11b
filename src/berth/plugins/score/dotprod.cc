// Score plugin "dotprod": the FGD paper's DotProd baseline (Tetris-style
// alignment), as the original simulator runs it (merge GPUs into one
// dimension, normalize by the largest machine):
//
//   node = (cpu_free / 128000, gpu_free / 8000)    gpu_free: all GPUs of the node
//   pod  = (cpu_req  / 128000, gpu_req  / 8000)    gpu_req: gpus * milli_per_gpu
//   score = trunc(100 * (1 - (node . pod) / 2))
//
// The smaller the alignment, the higher the score. A node whose free CPU is
// below the request scores 0. No normalization; a share takes the default GPU
// (the fullest one that fits). The floating-point steps are kept in the
// original's order so that truncation lands on the same integers. For the
// index search a tier's bound is the score of a node with the least CPU (at
// least the task's) and GPU the tier's nodes may hold (each step is monotone, so the
// score only falls as free CPU or GPU grows).
#include "berth/plugins/builtin.h"
#include "berth/plugins/score/score_util.h"

namespace berth::plugins {
namespace {

class DotProd final : public framework::ScorePlugin {
 public:
  static constexpr std::string_view kName = "dotprod";
  std::string_view Name() const override { return kName; }
  int64_t Score(const framework::CycleContext& ctx, const framework::TaskRequest& req, NodeId n) const override {
    return Raw(req, ctx.state.free_cpu(n), ctx.state.node_free_milli(n));
  }
  std::optional<int64_t> ScoreBound(const framework::CycleContext&, const framework::TaskRequest& req,
                                    const framework::NodeTier& tier) const override {
    return Raw(req, std::max(req.cpu_milli, tier.cpu_lo), tier.node_free_lo);
  }

 private:
  static int64_t Raw(const framework::TaskRequest& req, MilliCpu cpu_free, MilliGpu gpu_free) {
    if (cpu_free < req.cpu_milli) return 0;
    const double node_cpu = static_cast<double>(cpu_free) / kMaxSpecCpu;
    const double node_gpu = static_cast<double>(gpu_free) / kMaxSpecGpu;
    const double pod_cpu = static_cast<double>(req.cpu_milli) / kMaxSpecCpu;
    const double pod_gpu = static_cast<double>(req.total_milli()) / kMaxSpecGpu;
    double dot = 0;
    dot += node_cpu * pod_cpu;
    dot += node_gpu * pod_gpu;
    const double score = 1.0 - dot / 2.0;
    return static_cast<int64_t>(100.0 * score);
  }
};

}  // namespace

Status RegisterDotProdPlugin(framework::PluginRegistry& r) {
  return r.Register(std::string(DotProd::kName), SimpleFactory<DotProd>());
}

}  // namespace berth::plugins
