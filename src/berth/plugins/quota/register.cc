// Registration of the plugins for the queue tree's quota (admission and per-task charge).
#include "berth/plugins/builtin.h"
#include "berth/plugins/quota/quota.h"
#include "berth/plugins/score/score_util.h"

namespace berth::plugins {

Status RegisterQuotaPlugins(framework::PluginRegistry& registry) {
  return registry.Register(std::string(QuotaPlugin::kName), SimpleFactory<QuotaPlugin>());
}

}  // namespace berth::plugins
