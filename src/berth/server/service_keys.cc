// Idempotency keys of ended jobs: freed at once (keys made from the job's
// name) or once ServiceOptions::idempotency_ttl has passed since the
// submission (keys the client sent), so that a name or key can be used again.
#include "berth/server/service.h"

namespace berth::server {

void Service::ReleaseKey(const JobEntry& e) {
  auto it = by_key_.find(e.key);
  if (it == by_key_.end() || it->second != e.id) return;  // not held by this job (any more)
  const bool from_name = e.key.rfind("name:", 0) == 0;
  const TimeUs until = e.accepted_at + options_.idempotency_ttl;
  if (from_name || options_.idempotency_ttl <= 0 || until <= clock_.Now()) {
    by_key_.erase(it);
    return;
  }
  key_expiry_.emplace(until, e.id);
}

void Service::ExpireIdempotencyKeys() {
  if (key_expiry_.empty()) return;
  const TimeUs now = clock_.Now();
  while (!key_expiry_.empty() && key_expiry_.begin()->first <= now) {
    const int64_t id = key_expiry_.begin()->second;
    key_expiry_.erase(key_expiry_.begin());
    auto j = jobs_.find(id);
    if (j == jobs_.end()) continue;
    auto k = by_key_.find(j->second.key);
    if (k != by_key_.end() && k->second == id) by_key_.erase(k);
  }
}

}  // namespace berth::server
