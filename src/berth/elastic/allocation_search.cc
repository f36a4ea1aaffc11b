// allocation_search: the knapsack programme behind SearchAllocation.
#include "berth/elastic/allocation_search.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

namespace berth::elastic {

StatusOr<std::vector<int32_t>> SearchAllocation(const std::vector<AllocationOptions>& jobs, int64_t capacity) {
  const size_t n = jobs.size();
  // The GPUs worth tracking: no more than every job's largest option together.
  int64_t most = 0;
  for (size_t k = 0; k < n; ++k) {
    const AllocationOptions& o = jobs[k];
    if (o.gpus.size() != o.speedup.size())
      return InvalidArgument("allocation search: job " + std::to_string(k) + " has " + std::to_string(o.gpus.size()) +
                             " counts and " + std::to_string(o.speedup.size()) + " speedups");
    int32_t top = 0;
    for (size_t i = 0; i < o.gpus.size(); ++i)
      if (o.speedup[i] > 0 && o.gpus[i] > 0) top = std::max(top, o.gpus[i]);
    if (top == 0) return FailedPrecondition("allocation search: job " + std::to_string(k) + " has no usable option");
    most += top;
  }
  const int64_t cap = std::max<int64_t>(0, std::min(capacity, most));
  const size_t width = static_cast<size_t>(cap) + 1;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // cost[g]: least sum of 1/speedup over the jobs so far using exactly g GPUs;
  // pick[k * width + g]: the option job k took on that best path.
  std::vector<double> cost(width, kInf), next(width);
  std::vector<int32_t> pick(n * width, -1);
  cost[0] = 0;
  for (size_t k = 0; k < n; ++k) {
    const AllocationOptions& o = jobs[k];
    std::vector<int32_t> order(o.gpus.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return o.gpus[a] < o.gpus[b]; });
    std::fill(next.begin(), next.end(), kInf);
    for (size_t g = 0; g < width; ++g) {
      if (cost[g] == kInf) continue;
      for (int32_t i : order) {
        if (!(o.speedup[i] > 0) || o.gpus[i] <= 0) continue;
        const size_t to = g + static_cast<size_t>(o.gpus[i]);
        if (to >= width) break;
        const double c = cost[g] + 1.0 / o.speedup[i];
        // A strictly better path only: ties keep the path found first.
        if (c < next[to] * (1 - 1e-12)) {
          next[to] = c;
          pick[k * width + to] = i;
        }
      }
    }
    cost.swap(next);
  }
  size_t best = width;
  for (size_t g = 0; g < width; ++g)
    if (cost[g] != kInf && (best == width || cost[g] < cost[best] * (1 - 1e-12))) best = g;
  if (best == width)
    return FailedPrecondition("allocation search: the jobs' smallest options need more than " +
                              std::to_string(capacity) + " GPUs");
  std::vector<int32_t> out(n, -1);
  size_t g = best;
  for (size_t k = n; k-- > 0;) {
    const int32_t i = pick[k * width + g];
    out[k] = i;
    g -= static_cast<size_t>(jobs[k].gpus[i]);
  }
  return out;
}

}  // namespace berth::elastic
