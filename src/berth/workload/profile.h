// The plugins services need in a scheduling profile: the spread filter (and
// its admit hooks, which tell it where replicas run). A driver that runs
// services adds them to the policy's profile; profiles without services are
// left as they are (an extra filter would turn off the group score cache).
#pragma once

#include "berth/framework/registry.h"

namespace berth::workload {

framework::Profile WithServicePlugins(framework::Profile profile);

}  // namespace berth::workload
