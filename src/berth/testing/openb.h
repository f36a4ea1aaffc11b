// The openb default trace and the GPU-node cluster it runs on (Alibaba GPU
// trace 2023, ../shared/data/alibaba-gpu-v2023), read once per test binary:
// many tests replay it and it never changes.
//
//   auto in = testing::OpenbDefault();
//   ASSERT_TRUE(in.ok()) << in.status().ToString();
//   RunFgd((*in)->cluster, ..., (*in)->trace, ...);
#pragma once

#include "berth/cluster/cluster.h"
#include "berth/common/status.h"
#include "berth/sim/trace.h"

namespace berth::testing {

struct OpenbInputs {
  cluster::Cluster cluster;
  sim::Trace trace;
};

// The inputs, or why they could not be read. The pointer stays valid for the
// whole process.
StatusOr<const OpenbInputs*> OpenbDefault();

}  // namespace berth::testing
