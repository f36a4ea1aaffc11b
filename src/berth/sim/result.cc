// Distribution summaries.
#include "berth/sim/result.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace berth::sim {

Distribution Summarize(std::vector<double> v) {
  Distribution d;
  if (v.empty()) return d;
  std::sort(v.begin(), v.end());
  d.count = static_cast<int64_t>(v.size());
  d.mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  auto pct = [&](double p) {
    size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * v.size()));
    return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
  };
  d.p50 = pct(50);
  d.p95 = pct(95);
  d.p99 = pct(99);
  d.max = v.back();
  return d;
}

}  // namespace berth::sim
