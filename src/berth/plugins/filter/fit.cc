// The fit filter.
#include "berth/plugins/filter/fit.h"

#include <memory>

#include "berth/plugins/builtin.h"

namespace berth::plugins {

bool TaskFitsNode(const state::ClusterState& s, const framework::TaskRequest& req, NodeId n) {
  if (req.cpu_milli > s.free_cpu(n) || req.memory_mib > s.free_memory(n)) return false;
  if (req.gpus == 0) return true;
  const auto& node = s.cluster().node(n);
  if (node.gpu_count < req.gpus || req.gpu_types_unknown || !req.gpu_types.Accepts(node.gpu_type)) return false;
  if (req.gpu_memory_mib > 0) return s.GpuMemoryFits(n, req.gpus, req.milli_per_gpu, req.gpu_memory_mib);
  if (req.milli_per_gpu == kMilliPerGpu) return s.full_free_gpus(n) >= req.gpus;
  if (s.node_free_milli(n) < req.total_milli()) return false;
  const MilliGpu* free = s.gpu_free_array(n);
  int ok = 0;
  for (int g = 0; g < node.gpu_count; ++g)
    if (free[g] >= req.milli_per_gpu && ++ok >= req.gpus) return true;
  return false;
}

namespace {

class Fit final : public framework::FilterPlugin {
 public:
  static constexpr std::string_view kName = "fit";
  std::string_view Name() const override { return kName; }
  std::string_view FailReason() const override { return "insufficient resources or wrong GPU type"; }
  bool Filter(const framework::CycleContext& ctx, const framework::TaskRequest& req, NodeId n) const override {
    return TaskFitsNode(ctx.state, req, n);
  }
};

}  // namespace

Status RegisterFilterPlugins(framework::PluginRegistry& r) {
  return r.Register(std::string(Fit::kName),
                    [](const framework::PluginArgs&) -> StatusOr<std::unique_ptr<framework::Plugin>> {
                      return std::unique_ptr<framework::Plugin>(std::make_unique<Fit>());
                    });
}

}  // namespace berth::plugins
