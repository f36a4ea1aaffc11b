// Score plugin "gpupacking": the FGD paper's GpuPacking baseline, in integer
// arithmetic as the original simulator scores it. From best to worst:
//   1. the task fits on GPUs already in use (a share on a partly used GPU):
//        max(100 - sum_i(free_i * 100 / 1000) / 10, 50) over the GPUs it takes;
//   2. it needs completely free GPUs on a node already in use:
//        max(50 - completely free GPUs it takes, 33);
//   3. the node is idle (every GPU completely free):
//        max(33 - free GPUs, free GPUs).
// The GPUs "it takes" are the best-fit choice: GPUs in ascending order of free
// milli (stable by index), each taken if it has the per-GPU share free. A task
// without GPUs scores 0. No normalization; a share takes the default GPU.
//
// Bounds for the index search, over any node of a tier that can hold the task:
// g whole GPUs score max(50 - g, 33) on a used node and max(33 - k, k) on an
// idle one with k GPUs; a share scores at most max(100 - (r * 100 / 1000) / 10,
// 50) on a partly used GPU (its free milli is at least the share r), 49 on a
// completely free GPU of a used node, or the idle score.
#include <algorithm>
#include <array>

#include "berth/cluster/cluster.h"
#include "berth/plugins/builtin.h"
#include "berth/plugins/score/score_util.h"

namespace berth::plugins {
namespace {

class GpuPacking final : public framework::ScorePlugin {
 public:
  static constexpr std::string_view kName = "gpupacking";
  std::string_view Name() const override { return kName; }
  int64_t Score(const framework::CycleContext& ctx, const framework::TaskRequest& req, NodeId n) const override {
    if (req.gpus <= 0 || req.milli_per_gpu <= 0) return 0;
    const int32_t count = ctx.state.cluster().node(n).gpu_count;
    const int64_t fully_free = ctx.state.full_free_gpus(n);
    if (fully_free == count) return std::max<int64_t>(33 - fully_free, fully_free);

    // The best-fit GPU choice: ascending free milli, ties by index.
    const MilliGpu* free = ctx.state.gpu_free_array(n);
    std::array<int32_t, cluster::kMaxGpusPerNode> order;
    for (int32_t g = 0; g < count; ++g) order[g] = g;
    std::stable_sort(order.begin(), order.begin() + count, [free](int32_t a, int32_t b) { return free[a] < free[b]; });
    int32_t need = req.gpus;
    int64_t fully_free_used = 0;
    int64_t free_ratio_sum = 0;  // sum of free_i * 100 / 1000 over the GPUs taken
    for (int32_t k = 0; k < count && need > 0; ++k) {
      const MilliGpu left = free[order[k]];
      if (left < req.milli_per_gpu) continue;
      --need;
      if (left == kMilliPerGpu) ++fully_free_used;
      free_ratio_sum += int64_t{left} * 100 / kMilliPerGpu;
    }
    if (need != 0) return 0;  // cannot happen after the fit filter
    if (fully_free_used > 0) return std::max<int64_t>(50 - fully_free_used, 33);
    return std::max<int64_t>(100 - free_ratio_sum / 10, 50);
  }
  std::optional<int64_t> ScoreBound(const framework::CycleContext&, const framework::TaskRequest& req,
                                    const framework::NodeTier& tier) const override {
    // Idle: max(33 - k, k) over the tier's fully free counts.
    const int64_t idle = std::max<int64_t>(33 - tier.full_free_lo, tier.full_free_hi);
    if (!req.is_sharing()) return std::max(idle, std::max<int64_t>(50 - req.gpus, 33));
    const int64_t partly_used = std::max<int64_t>(100 - (int64_t{req.milli_per_gpu} * 100 / kMilliPerGpu) / 10, 50);
    return std::max({idle, partly_used, int64_t{49}});
  }
};

}  // namespace

Status RegisterGpuPackingPlugin(framework::PluginRegistry& r) {
  return r.Register(std::string(GpuPacking::kName), SimpleFactory<GpuPacking>());
}

}  // namespace berth::plugins
