// Structural checks of a built Cluster, for tests: every level's domains tile
// the node range [0, N) with contiguous, ordered ranges; parents contain their
// children; per-domain GPU counts add up; nodes point at the domains that hold
// them; GPUs are numbered node by node.
//
//   EXPECT_TRUE(testing::CheckClusterInvariants(c).ok());
#pragma once

#include "berth/cluster/cluster.h"
#include "berth/common/status.h"

namespace berth::testing {

// OK, or Internal naming the first broken rule.
Status CheckClusterInvariants(const cluster::Cluster& c);

}  // namespace berth::testing
