// The score folder's registrations (one function per plugin file).
#include "berth/plugins/builtin.h"

namespace berth::plugins {

Status RegisterBestFitPlugins(framework::PluginRegistry& r);

Status RegisterScorePlugins(framework::PluginRegistry& r) {
  BERTH_RETURN_IF_ERROR(RegisterBestFitPlugins(r));
  return Status::Ok();
}

}  // namespace berth::plugins
