// The in-flight ledger's rules (ledger.h).
#include "berth/federation/ledger.h"

#include <algorithm>

namespace berth::federation {

int64_t JobGpus(const job::JobSpec& spec) {
  int64_t gpus = 0;
  for (const auto& g : spec.groups) gpus += int64_t{g.gang_min()} * std::max(g.gpus, 1);
  return gpus;
}

InFlight SentEntry(const job::JobSpec& spec, int64_t attempt, bool promise, int32_t type, TimeUs arrives,
                   TimeUs lease_ttl) {
  const job::TaskGroup* biggest = nullptr;
  int32_t tasks = 0;
  for (const auto& g : spec.groups) {
    tasks += g.gang_min();
    if (biggest == nullptr || g.gpus > biggest->gpus) biggest = &g;
  }
  return InFlight{attempt, JobGpus(spec), biggest ? std::max(1, biggest->gpus) : 1, tasks, promise ? type : -1,
                  arrives, promise ? arrives + lease_ttl : kNoExpiry};
}

int64_t ReflectDigest(std::vector<InFlight>& fl, TimeUs taken, TimeUs now) {
  int64_t expired = 0;
  fl.erase(std::remove_if(fl.begin(), fl.end(),
                          [&](const InFlight& f) {
                            if (f.arrives <= taken) return true;
                            if (f.expires <= now) return ++expired, true;
                            return false;
                          }),
           fl.end());
  return expired;
}

bool ReleaseAttempt(std::vector<InFlight>& fl, int64_t attempt) {
  const size_t before = fl.size();
  fl.erase(std::remove_if(fl.begin(), fl.end(), [&](const InFlight& f) { return f.attempt == attempt; }), fl.end());
  return fl.size() != before;
}

int64_t ExpireLeases(std::vector<InFlight>& fl, TimeUs now) {
  const size_t before = fl.size();
  fl.erase(std::remove_if(fl.begin(), fl.end(), [&](const InFlight& f) { return f.expires <= now; }), fl.end());
  return static_cast<int64_t>(before - fl.size());
}

}  // namespace berth::federation
