// The "entitle" plugin: keeps each queue to the node types its reachable
// entitlement gives it (queue file `entitlement: reachable`; ledger.h,
// tenancy/entitlement.h), so that work that fits anywhere does not take the
// nodes that only others' jobs fit while those others wait.
//
// The ledger splits each leaf's entitled amount over the GPU types (a flow of
// the water-filling's result through the classes its demand fits:
// Ledger::entitled_on). For a task of queue q on a node of type t:
//   Filter  the node is out when q's use of t plus the task's charge there
//           exceeds q's entitlement on t while another leaf is below its own
//           entitlement on t (it has demand that only waits for room there);
//           when no other leaf is short on t the node stays in (work
//           conserving: nobody else is entitled to the idle GPUs).
//   Score   q's headroom on t (entitlement on t - use of t, in the unit),
//           min-max normalized to 0..100: a job goes first to the types it is
//           entitled to and does not yet use.
// Without a reachable entitlement both are neutral (every node in, score 0).
// The score depends only on the node's type (ScorePlugin::ScoresByType, FilterPlugin::FiltersByType), so with
// best fit the scheduler finds each type's best node from the indexes and
// compares the types instead of scoring every node.
//
// Policy `fairshare-entitled` (tenancy_policies.cc): fairshare with this
// filter and this score weighed before best fit.
#pragma once

#include "berth/common/status.h"
#include "berth/framework/registry.h"

namespace berth::plugins {

inline constexpr std::string_view kEntitleName = "entitle";
Status RegisterEntitlePlugin(framework::PluginRegistry& registry);

}  // namespace berth::plugins
