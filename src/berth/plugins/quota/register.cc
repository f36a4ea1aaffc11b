// Registration of the plugins for the queue tree's quota (admission and per-task charge)
// and its entitlement (entitle/entitle.h).
#include "berth/plugins/builtin.h"
#include "berth/plugins/entitle/entitle.h"
#include "berth/plugins/quota/quota.h"
#include "berth/plugins/score/score_util.h"

namespace berth::plugins {

Status RegisterQuotaPlugins(framework::PluginRegistry& registry) {
  BERTH_RETURN_IF_ERROR(registry.Register(std::string(QuotaPlugin::kName), SimpleFactory<QuotaPlugin>()));
  return RegisterEntitlePlugin(registry);
}

}  // namespace berth::plugins
