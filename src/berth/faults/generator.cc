// The seeded fault generator (see generator.h).
#include "berth/faults/generator.h"

#include <cmath>

namespace berth::faults {

int64_t FaultGenerator::Components(const cluster::Cluster& c, FaultKind kind) {
  switch (kind) {
    case FaultKind::kGpu:
    case FaultKind::kTask: return c.total_gpus();
    case FaultKind::kNode:
    case FaultKind::kLink:
    case FaultKind::kMaintenance: return c.num_nodes();
    case FaultKind::kLeaf: return static_cast<int64_t>(c.domains_at(cluster::Level::kLeaf).size());
    case FaultKind::kSpine: return static_cast<int64_t>(c.domains_at(cluster::Level::kSpine).size());
    case FaultKind::kCluster: return static_cast<int64_t>(c.domains_at(cluster::Level::kCluster).size());
  }
  return 0;
}

FaultGenerator::FaultGenerator(const cluster::Cluster& cluster, std::vector<FailureRate> rates, uint64_t seed,
                               TimeUs start)
    : cluster_(cluster), rates_(std::move(rates)), rng_(seed ^ 0x6661756c74ULL), start_(start) {
  for (const FailureRate& r : rates_) {
    weight_.push_back(r.per_hour * static_cast<double>(Components(cluster, r.kind)));
    total_ += weight_.back();
  }
}

std::optional<Fault> FaultGenerator::Next() {
  if (!(total_ > 0)) return std::nullopt;
  now_h_ += rng_.Exponential(1.0 / total_);
  double pick = rng_.UniformReal() * total_;
  size_t k = 0;
  while (k + 1 < rates_.size() && (weight_[k] <= 0 || pick >= weight_[k])) {
    if (weight_[k] > 0) pick -= weight_[k];
    ++k;
  }
  const FailureRate& r = rates_[k];
  Fault f;
  f.at = start_ + static_cast<TimeUs>(std::llround(now_h_ * 3600.0 * 1e6));
  f.kind = r.kind;
  f.cause = r.cause;
  f.deadline = r.deadline;
  const auto n = static_cast<uint64_t>(Components(cluster_, r.kind));
  const uint64_t which = rng_.Uniform(n);
  switch (r.kind) {
    case FaultKind::kGpu:
    case FaultKind::kTask: {
      f.node = cluster_.NodeOfGpu(static_cast<int32_t>(which));
      f.gpu = static_cast<int32_t>(which) - cluster_.node(f.node).first_gpu;
      break;
    }
    case FaultKind::kNode:
    case FaultKind::kLink:
    case FaultKind::kMaintenance: f.node = NodeId(static_cast<int32_t>(which)); break;
    case FaultKind::kLeaf: f.domain = cluster_.domains_at(cluster::Level::kLeaf)[which]; break;
    case FaultKind::kSpine: f.domain = cluster_.domains_at(cluster::Level::kSpine)[which]; break;
    case FaultKind::kCluster: f.domain = cluster_.domains_at(cluster::Level::kCluster)[which]; break;
  }
  if (r.kind != FaultKind::kTask) {
    const double mean = static_cast<double>(r.recovery.value);
    const double d = r.recovery.kind == DurationDist::Kind::kExponential ? rng_.Exponential(mean) : mean;
    f.duration = std::max<TimeUs>(1, static_cast<TimeUs>(std::llround(d)));
  }
  return f;
}

}  // namespace berth::faults
