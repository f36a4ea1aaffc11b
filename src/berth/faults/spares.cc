// The expected-cost spare rule (see spares.h).
#include "berth/faults/spares.h"

#include <algorithm>
#include <cmath>

namespace berth::faults {

int32_t SpareCount(const SpareInputs& in) {
  const double lambda = in.nodes * in.faults_per_node_hour;
  if (!(lambda > 0) || !(in.gang_gpus * in.saved_hours > 0) || in.nodes < 2) return 0;
  const double mu = lambda * in.mean_down_hours;
  int32_t best = 0;
  double best_cost = INFINITY;
  double below = 0;           // P(X < N)
  double term = std::exp(-mu);  // P(X = N)
  for (int32_t n = 0; n <= in.nodes / 2; ++n) {
    const double tail = std::max(0.0, 1.0 - below);
    const double cost = n * in.gpus_per_node + lambda * tail * in.gang_gpus * in.saved_hours;
    if (cost < best_cost - 1e-12) {
      best_cost = cost;
      best = n;
    }
    below += term;
    term *= mu / (n + 1);
  }
  return best;
}

NodeFaultRate NodeLevelRate(const std::vector<FailureRate>& rates, int32_t gpus_per_node) {
  NodeFaultRate out;
  double weighted = 0;
  for (const FailureRate& r : rates) {
    double per_node = 0;
    if (r.kind == FaultKind::kGpu) per_node = r.per_hour * gpus_per_node;
    if (r.kind == FaultKind::kNode || r.kind == FaultKind::kLink || r.kind == FaultKind::kMaintenance)
      per_node = r.per_hour;
    out.per_node_hour += per_node;
    weighted += per_node * static_cast<double>(r.recovery.Mean()) / 3.6e9;
  }
  if (out.per_node_hour > 0) out.mean_down_hours = weighted / out.per_node_hour;
  return out;
}

int32_t DomainSpareCount(int32_t nodes, int64_t gpus, const NodeFaultRate& rate, int64_t gang_gpus, TimeUs restart,
                         TimeUs repair) {
  SpareInputs in;
  in.nodes = nodes;
  in.gpus_per_node = static_cast<int32_t>(std::max<int64_t>(1, gpus / std::max(1, nodes)));
  in.faults_per_node_hour = rate.per_node_hour;
  in.mean_down_hours = rate.mean_down_hours;
  in.gang_gpus = static_cast<double>(gang_gpus);
  in.saved_hours = UsToSeconds(std::max<TimeUs>(0, restart - repair)) / 3600.0;
  return SpareCount(in);
}

}  // namespace berth::faults
