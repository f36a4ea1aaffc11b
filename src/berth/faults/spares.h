// How many hot spare nodes a topology domain keeps: an expected-cost rule.
//
// A domain of m nodes sees node-level faults (a GPU, the node, its link,
// maintenance) at lambda = m x per-node rate per hour; each takes a node out
// for D hours on average, so the nodes out at once are X ~ Poisson(lambda D)
// (an M/G/inf queue). With N spares, a fault finds no spare when X >= N; the
// gang it hits then restarts whole instead of being repaired in place, which
// costs G x s GPU-hours (G the gang's GPUs, s the restart time saved by a
// repair). Keeping N spares idle costs N x g GPU-hours per hour (g GPUs per
// node). N minimizes, per hour,
//
//   cost(N) = N g + lambda P(X >= N) G s,      0 <= N <= m / 2.
//
// Example: m = 32 nodes of 8 GPUs, 1.5e-4 faults per node-hour, D = 20 h:
// lambda = 0.0048/h, lambda D = 0.096; G = 16,384, s = 0.5 h:
// cost(0) = 39.3, cost(1) = 8 + 3.6 = 11.6, cost(2) = 16.2: N = 1.
#pragma once

#include <cstdint>
#include <vector>

#include "berth/faults/failure_file.h"

namespace berth::faults {

struct SpareInputs {
  int32_t nodes = 0;            // m
  int32_t gpus_per_node = 8;    // g
  double faults_per_node_hour = 0;
  double mean_down_hours = 0;   // D
  double gang_gpus = 0;         // G
  double saved_hours = 0;       // s
};

// The N of the rule above (0 when nothing is saved or nothing fails).
int32_t SpareCount(const SpareInputs& in);
// Per-node fault rate (faults per node-hour) of the node-level kinds and their
// mean time out (hours), from rates; gpus_per_node converts per-GPU rates.
struct NodeFaultRate {
  double per_node_hour = 0;
  double mean_down_hours = 0;
};
NodeFaultRate NodeLevelRate(const std::vector<FailureRate>& rates, int32_t gpus_per_node);
// The rule for one domain of `nodes` nodes holding `gpus` GPUs: the gang a
// missing spare costs has `gang_gpus` GPUs, a whole restart of it costs
// `restart` and an in-place repair `repair` (the simulator and the service
// size their spares with this).
int32_t DomainSpareCount(int32_t nodes, int64_t gpus, const NodeFaultRate& rate, int64_t gang_gpus, TimeUs restart,
                         TimeUs repair);

}  // namespace berth::faults
