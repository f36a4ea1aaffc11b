// allocation_search: the exact division of a cluster's GPUs among elastic
// jobs that maximises Pollux's fitness, the generalised mean of the jobs'
// speedups with power p = -1, i.e. minimises sum over jobs of 1 / speedup
// (Qiao et al., OSDI'21, section 4.2).
//
// Each job offers a list of options (a GPU count and the speedup it would
// have there, any restart factor already applied); every job takes exactly
// one option and the counts together fit the capacity. The search is a
// knapsack dynamic programme over (job, GPUs used), exact for any option
// lists: O(jobs x capacity x options). Ties are broken by a fixed order
// (fewer GPUs in all, then the order of the scan), so the answer is the same
// every time.
//
//   std::vector<AllocationOptions> jobs = {{{1, 2, 4}, {1.0, 1.8, 3.1}}, ...};
//   auto pick = SearchAllocation(jobs, 64);  // index into each job's options
#pragma once

#include <cstdint>
#include <vector>

#include "berth/common/status.h"

namespace berth::elastic {

struct AllocationOptions {
  std::vector<int32_t> gpus;    // the counts it may take (any order, each > 0)
  std::vector<double> speedup;  // at each count (> 0; others are never chosen)
};

// For every job, the index of the option it takes. Fails when no choice of
// one positive option per job fits in `capacity` GPUs.
StatusOr<std::vector<int32_t>> SearchAllocation(const std::vector<AllocationOptions>& jobs, int64_t capacity);

}  // namespace berth::elastic
