// Runs independent pieces of work on a few threads and gives their statuses
// back in index order, e.g. one simulation per policy (`berth simulate
// --policy a,b,c --threads N`). Each index runs exactly once; which thread
// runs it is not defined, so `fn` must touch only what belongs to its index
// (or guard what it shares). With threads <= 1 or a single item everything
// runs on the caller's thread, in order.
//
//   std::vector<Status> s = ParallelFor(policies.size(), 2, [&](size_t i) { return Run(i); });
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "berth/common/status.h"

namespace berth {

std::vector<Status> ParallelFor(size_t n, int threads, const std::function<Status(size_t)>& fn);

// The number of threads `--threads 0` means: the machine's cores (at least 1).
int DefaultThreads();

}  // namespace berth
