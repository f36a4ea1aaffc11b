// What the calling thread has used so far, as the kernel counts it: CPU time
// and the times it left its core (preempted, or asleep waiting) and took page
// faults. The difference of two readings around a piece of work tells
// whether a slow run was its own work or time spent off the core.
//
//   ThreadUsage before = ThreadUsage::Now();
//   Work();
//   ThreadUsage used = ThreadUsage::Now() - before;
#pragma once

#include <sys/resource.h>
#include <time.h>

#include <cstdint>

namespace berth::server {

struct ThreadUsage {
  int64_t cpu_ns = 0;       // CPU time of the thread
  int64_t preempted = 0;    // involuntary context switches
  int64_t slept = 0;        // voluntary context switches (waits)
  int64_t faults = 0;       // minor and major page faults

  static ThreadUsage Now() {
    ThreadUsage u;
    timespec ts{};
    if (::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
      u.cpu_ns = static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
    rusage r{};
    if (::getrusage(RUSAGE_THREAD, &r) == 0) {
      u.preempted = r.ru_nivcsw;
      u.slept = r.ru_nvcsw;
      u.faults = r.ru_minflt + r.ru_majflt;
    }
    return u;
  }
  ThreadUsage operator-(const ThreadUsage& o) const {
    return {cpu_ns - o.cpu_ns, preempted - o.preempted, slept - o.slept, faults - o.faults};
  }
};

}  // namespace berth::server
