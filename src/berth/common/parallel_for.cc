// ParallelFor: a shared counter hands out indices to at most `threads` workers.
#include "berth/common/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace berth {

std::vector<Status> ParallelFor(size_t n, int threads, const std::function<Status(size_t)>& fn) {
  std::vector<Status> out(n);
  const size_t workers = std::min<size_t>(n, static_cast<size_t>(std::max(threads, 1)));
  if (workers <= 1) {
    for (size_t i = 0; i < n; ++i) out[i] = fn(i);
    return out;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) out[i] = fn(i);
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return out;
}

int DefaultThreads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace berth
