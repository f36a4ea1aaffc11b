// Registration of the plugins for reservations for blocked jobs and backfill ahead of them.
#include "berth/plugins/builtin.h"

namespace berth::plugins {

Status RegisterBackfillPlugins(framework::PluginRegistry& registry) {
  (void)registry;
  return Status::Ok();
}

}  // namespace berth::plugins
