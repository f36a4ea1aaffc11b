// Registration of the plugins for preemption (priority and reclaim) and its victim choice.
#include "berth/plugins/builtin.h"

namespace berth::plugins {

Status RegisterPreemptionPlugins(framework::PluginRegistry& registry) {
  (void)registry;
  return Status::Ok();
}

}  // namespace berth::plugins
