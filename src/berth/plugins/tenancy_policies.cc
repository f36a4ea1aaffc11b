// Named policies for sharing a fleet between tenants: ordering (srtf,
// tiresias, fairshare), quotas, preemption and backfill.
#include "berth/plugins/backfill/register.h"
#include "berth/plugins/builtin.h"

namespace berth::plugins {

Status RegisterTenancyPolicies(framework::PolicyRegistry& registry) {
  BERTH_RETURN_IF_ERROR(RegisterPreemptionPolicies(registry));
  BERTH_RETURN_IF_ERROR(RegisterBackfillPolicies(registry));
  return Status::Ok();
}

}  // namespace berth::plugins
