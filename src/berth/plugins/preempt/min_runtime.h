// The min-runtime guard a profile's preemption post-filters hold running
// work to (register.cc: the `min_runtime_s` arg, default 600 s), for a
// driver that must wake when a guard expires (sim/service_sim.cc: a service
// replica waiting for a victim past its guard).
#pragma once

#include "berth/common/quantity.h"
#include "berth/framework/registry.h"

namespace berth::plugins {

// The guard of the first preemption post-filter (preempt,
// preempt-lowest-priority) of `profile`; -1 when it has none.
TimeUs MinRuntimeOf(const framework::Profile& profile);

}  // namespace berth::plugins
