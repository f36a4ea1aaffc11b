// GPU memory fit under every placement policy: the check sits in the shared
// fit layer (the fit filter, the GPU choice, the type set a group resolves
// to), so no policy may put a task where its GPU memory does not fit, and each
// says "GPU memory" when that is why a task waits.
#include <gtest/gtest.h>

#include <string>

#include "berth/testing/scenario.h"

namespace berth::sim {
namespace {

// Shares: four 12000 MiB tasks take one T4 (16384 MiB) each, whatever the
// policy's packing would prefer; a 5000 MiB task then fits nowhere until one ends.
constexpr const char* kShares = R"(cluster 2x2:T4
policy POLICY
submit job=a gpus=1 milli=300 gpu-mem=12000
submit job=b gpus=1 milli=300 gpu-mem=12000
submit job=c gpus=1 milli=300 gpu-mem=12000
submit job=d gpus=1 milli=300 gpu-mem=12000
submit job=e gpus=1 milli=100 gpu-mem=5000
schedule
expect running a b c d
expect pending e reason~"GPU memory (5000 MiB per GPU): 2 nodes lack free GPU memory"
expect free-gpu-mem 4384 node=node-0 gpu=0
expect free-gpu-mem 4384 node=node-0 gpu=1
expect free-gpu-mem 4384 node=node-1 gpu=0
expect free-gpu-mem 4384 node=node-1 gpu=1
check-indexes
finish a
schedule
expect running e
check-indexes
)";

// Whole GPUs: a gang whose tasks need 20000 MiB per GPU runs only on the
// 32 GiB V100s, even with the T4 node free.
constexpr const char* kWhole = R"(cluster 1x4:T4+1x4:V100M32
policy POLICY
submit job=g count=2 gpus=2 gpu-mem=20000
submit job=t gpus=4 gpu-mem=20000
schedule
expect placed g node-1
expect pending t reason~"GPU memory (20000 MiB per GPU): 1 nodes' GPUs are smaller"
check-indexes
)";

std::string With(const char* script, const std::string& policy) {
  std::string s = script;
  s.replace(s.find("POLICY"), 6, policy);
  return s;
}

class GpuMemoryUnderPolicy : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuMemoryUnderPolicy, SharesFitTheirGpuMemory) {
  testing::ScenarioRunner r;
  Status s = r.Run(With(kShares, GetParam()), "shares-" + GetParam());
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST_P(GpuMemoryUnderPolicy, WholeGpusGoToTypesWithTheMemory) {
  testing::ScenarioRunner r;
  Status s = r.Run(With(kWhole, GetParam()), "whole-" + GetParam());
  EXPECT_TRUE(s.ok()) << s.ToString();
}

// fgd and berth-frag score from the workload's typical pods, which the scenario
// driver does not supply; their GPU choice goes through the same ScoreByDelta
// check, run by replay (examples/traces/gpu-memory-shares.jsonl).
INSTANTIATE_TEST_SUITE_P(Policies, GpuMemoryUnderPolicy,
                         ::testing::Values("bestfit", "firstfit", "worstfit", "binpack", "fifo", "topology", "random", "dotprod", "gpupacking", "gpuclustering",
                                           "priority"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace berth::sim
