// Runs independent pieces of work on a few threads and gives their statuses
// back in index order, e.g. one simulation per policy (`berth simulate
// --policy a,b,c --threads N`). Each index runs exactly once; which thread
// runs it is not defined, so `fn` must touch only what belongs to its index
// (or guard what it shares). With threads <= 1 or a single item everything
// runs on the caller's thread, in order.
//
//   std::vector<Status> s = ParallelFor(policies.size(), 2, [&](size_t i) { return Run(i); });
//   StatusOr<std::vector<R>> r = ParallelMap<R>(n, 0, [&](size_t i) -> StatusOr<R> { ... });
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "berth/common/status.h"

namespace berth {

std::vector<Status> ParallelFor(size_t n, int threads, const std::function<Status(size_t)>& fn);

// The number of threads `--threads 0` means: the machine's cores (at least 1).
int DefaultThreads();

// fn(0..n-1) on `threads` threads (0: DefaultThreads()), the values in index
// order, or the error of the lowest index that failed.
template <typename T>
StatusOr<std::vector<T>> ParallelMap(size_t n, int threads, const std::function<StatusOr<T>(size_t)>& fn) {
  std::vector<std::optional<T>> values(n);
  const std::vector<Status> status = ParallelFor(n, threads == 0 ? DefaultThreads() : threads, [&](size_t i) {
    StatusOr<T> v = fn(i);
    if (!v.ok()) return v.status();
    values[i] = std::move(v).value();
    return Status::Ok();
  });
  std::vector<T> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!status[i].ok()) return status[i];
    out.push_back(std::move(*values[i]));
  }
  return out;
}

}  // namespace berth
