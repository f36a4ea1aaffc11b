// Score plugin "gpuclustering": the FGD paper's GpuClustering baseline: keep
// tasks of the same kind together. A task's tag is "share" (one partial GPU)
// or "k-gpu" (k whole GPUs); tasks without GPUs have none and score 0. For a
// node holding tasks with tags T (tasks without GPUs ignored):
//   base = 75 if T = {tag}, 50 if tag is in T among others, 25 if T is empty,
//          0 otherwise (only other tags);
//   score = 25 * (8000 - gpu_free) / 8000 (integer division) + base,
// so fuller nodes win within a band. No normalization; a share takes the
// default GPU. The score reads only the node (NodeLocal), so the scheduler
// keeps it per node and task class.
#include "berth/plugins/builtin.h"
#include "berth/plugins/score/score_util.h"

namespace berth::plugins {
namespace {

// 0 = no GPU, -1 = share, k = k whole GPUs.
int32_t Tag(int32_t gpus, MilliGpu milli_per_gpu) {
  if (gpus == 0) return 0;
  if (gpus == 1 && milli_per_gpu < kMilliPerGpu) return -1;
  return gpus;
}

class GpuClustering final : public framework::ScorePlugin {
 public:
  static constexpr std::string_view kName = "gpuclustering";
  std::string_view Name() const override { return kName; }
  // The node's tasks and free GPUs decide; no normalization.
  bool NodeLocal() const override { return true; }
  int64_t Score(const framework::CycleContext& ctx, const framework::TaskRequest& req, NodeId n) const override {
    const int32_t tag = Tag(req.gpus, req.milli_per_gpu);
    if (tag == 0) return 0;
    bool same = false, other = false;
    for (TaskKey t : ctx.state.tasks_on(n)) {
      const state::Allocation* a = ctx.state.Find(t);
      if (a == nullptr) continue;
      const int32_t held = Tag(a->gpu_count(), a->milli_per_gpu);
      if (held == 0) continue;
      if (held == tag) same = true; else other = true;
      if (same && other) break;
    }
    const int64_t base = same ? (other ? 50 : 75) : (other ? 0 : 25);
    const int64_t fullness = 25 * (static_cast<int64_t>(kMaxSpecGpu) - ctx.state.node_free_milli(n)) /
                             static_cast<int64_t>(kMaxSpecGpu);
    return fullness + base;
  }
};

}  // namespace

Status RegisterGpuClusteringPlugin(framework::PluginRegistry& r) {
  return r.Register(std::string(GpuClustering::kName), SimpleFactory<GpuClustering>());
}

}  // namespace berth::plugins
