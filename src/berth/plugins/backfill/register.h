// The named policies built around the backfill plugin (called from the
// tenancy policies' registration).
#pragma once

#include "berth/common/status.h"
#include "berth/framework/registry.h"

namespace berth::plugins {

// "backfill": FIFO order without head-of-line blocking, fit filter, best fit,
// gang permit, and the backfill plugin as admit plugin and filter.
Status RegisterBackfillPolicies(framework::PolicyRegistry& registry);

}  // namespace berth::plugins
