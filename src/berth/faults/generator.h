// The seeded fault generator: every rate of a FailureSpec is a Poisson process
// per component (GPU, node, leaf, spine, cluster); their superposition is
// drawn one fault at a time, so a run of any length needs no horizon.
//
//   FaultGenerator g(cluster, spec.rates, /*seed=*/42, /*start=*/0);
//   while (auto f = g.Next()) { if (f->at > end) break; ... }
//
// Next fault: t += Exp(1 / R) where R = sum over rates of per_hour x the count
// of its components; the rate is chosen in proportion to its share of R, the
// component uniformly, the recovery time from the rate's distribution. The
// same cluster, rates and seed give the same faults on every platform.
#pragma once

#include <optional>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/common/rng.h"
#include "berth/faults/failure_file.h"

namespace berth::faults {

class FaultGenerator {
 public:
  FaultGenerator(const cluster::Cluster& cluster, std::vector<FailureRate> rates, uint64_t seed, TimeUs start);
  // The next fault, or nullopt when every rate is 0 (or there are none).
  std::optional<Fault> Next();
  // Faults per hour over the whole cluster.
  double total_per_hour() const { return total_; }
  // How many components a rate of this kind has in the cluster.
  static int64_t Components(const cluster::Cluster& cluster, FaultKind kind);

 private:
  const cluster::Cluster& cluster_;
  std::vector<FailureRate> rates_;
  std::vector<double> weight_;  // per rate: per_hour x components
  double total_ = 0;
  Rng rng_;
  double now_h_ = 0;  // hours since start
  TimeUs start_;
};

}  // namespace berth::faults
