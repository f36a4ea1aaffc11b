// The score folder's registrations (one function per plugin file).
#include "berth/plugins/builtin.h"

namespace berth::plugins {

Status RegisterBestFitPlugins(framework::PluginRegistry& r);
Status RegisterDotProdPlugin(framework::PluginRegistry& r);
Status RegisterGpuPackingPlugin(framework::PluginRegistry& r);
Status RegisterGpuClusteringPlugin(framework::PluginRegistry& r);
Status RegisterRandomPlugin(framework::PluginRegistry& r);
Status RegisterWorstFitPlugin(framework::PluginRegistry& r);

Status RegisterScorePlugins(framework::PluginRegistry& r) {
  BERTH_RETURN_IF_ERROR(RegisterBestFitPlugins(r));
  BERTH_RETURN_IF_ERROR(RegisterDotProdPlugin(r));
  BERTH_RETURN_IF_ERROR(RegisterGpuPackingPlugin(r));
  BERTH_RETURN_IF_ERROR(RegisterGpuClusteringPlugin(r));
  BERTH_RETURN_IF_ERROR(RegisterRandomPlugin(r));
  BERTH_RETURN_IF_ERROR(RegisterWorstFitPlugin(r));
  return Status::Ok();
}

}  // namespace berth::plugins
