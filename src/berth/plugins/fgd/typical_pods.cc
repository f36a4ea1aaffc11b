// Typical pods of a workload.
#include "berth/plugins/fgd/typical_pods.h"

#include <algorithm>
#include <map>

namespace berth::plugins::fgd {

PodShape ShapeOf(const job::TaskGroup& g) { return framework::TaskShape::Of(g); }

TypicalPods ComputeTypicalPods(std::span<const job::JobSpec> workload, int coverage_percent) {
  return ComputeTypicalPods(framework::WorkloadFacts::Of(workload), coverage_percent);
}

TypicalPods ComputeTypicalPods(const framework::WorkloadFacts& facts, int coverage_percent) {
  coverage_percent = std::clamp(coverage_percent, 1, 100);
  const std::map<PodShape, int64_t>& counts = facts.shape_tasks;
  TypicalPods out;
  out.total_pods = facts.total_tasks;
  std::vector<TypicalPod> all;
  all.reserve(counts.size());
  for (const auto& [shape, count] : counts) all.push_back({shape, count, 0});
  std::sort(all.begin(), all.end(), [](const TypicalPod& a, const TypicalPod& b) {
    return a.count != b.count ? a.count > b.count : b.shape < a.shape;
  });

  // The arithmetic below is the original's, in doubles and in the same order,
  // so that the weights (and every fragmentation figure) are bit-identical.
  const double total = static_cast<double>(out.total_pods);
  const double expected = static_cast<double>(coverage_percent) * total / 100.0;
  double covered = 0;
  size_t n = 0;
  while (covered < expected && n < all.size()) covered += static_cast<double>(all[n++].count);
  all.resize(n);
  for (auto& p : all) {
    p.weight = static_cast<double>(p.count) / total;
    if (n < counts.size()) p.weight /= covered / total;  // renormalize what was kept
    out.covered_pods += p.count;
  }
  out.pods = std::move(all);
  return out;
}

}  // namespace berth::plugins::fgd
