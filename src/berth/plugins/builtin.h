// Registration of every built-in plugin and policy. Each plugin folder
// contributes one Register* function; this file lists them.
#pragma once

#include "berth/common/quantity.h"
#include "berth/common/status.h"
#include "berth/framework/registry.h"

namespace berth::plugins {

Status RegisterBuiltinPlugins(framework::PluginRegistry& registry);
Status RegisterBuiltinPolicies(framework::PolicyRegistry& registry);

// Per folder.
Status RegisterQueueSortPlugins(framework::PluginRegistry& registry);
Status RegisterFilterPlugins(framework::PluginRegistry& registry);
Status RegisterScorePlugins(framework::PluginRegistry& registry);
Status RegisterGangPlugins(framework::PluginRegistry& registry);
Status RegisterTopologyPlugins(framework::PluginRegistry& registry);
Status RegisterFgdPlugins(framework::PluginRegistry& registry);
Status RegisterCandidatePlugins(framework::PluginRegistry& registry);
Status RegisterFragPlugins(framework::PluginRegistry& registry);
Status RegisterQuotaPlugins(framework::PluginRegistry& registry);
Status RegisterPreemptionPlugins(framework::PluginRegistry& registry);
Status RegisterBackfillPlugins(framework::PluginRegistry& registry);
Status RegisterSpreadPlugins(framework::PluginRegistry& registry);
Status RegisterColocationPlugins(framework::PluginRegistry& registry);
Status RegisterServicePolicies(framework::PolicyRegistry& registry);
Status RegisterGoodputPlugins(framework::PluginRegistry& registry);  // plugins/goodput
Status RegisterGoodputPolicy(framework::PolicyRegistry& registry);
Status RegisterTenancyPolicies(framework::PolicyRegistry& registry);
Status RegisterPreemptionPolicies(framework::PolicyRegistry& registry);  // plugins/preempt/register.cc

// Sets the guard of every preemption post-filter of `profile`: a job runs at
// least `min_runtime` in a run before it may be evicted (the plugins' arg
// min_runtime_s, default 600 s). An error when the profile does not preempt.
Status SetMinRuntime(framework::Profile& profile, TimeUs min_runtime);

}  // namespace berth::plugins
