// The dispatcher's in-flight ledger (digest.h, InFlight), shared by the
// simulator and the live dispatcher so that both keep it by the same rules:
//
//   fl.push_back(SentEntry(spec, attempt, promise, type, arrives, lease_ttl));
//   ReflectDigest(fl, digest.taken_at, now);   // a digest arrived
//   ReleaseAttempt(fl, attempt);               // admitted, refused or withdrawn
//
// An entry holds the GPUs (and blocks) of a job sent to a member that no
// digest seen yet reflects; a promise also holds a lease that ends at
// `expires`.
#pragma once

#include <cstdint>
#include <vector>

#include "berth/federation/digest.h"
#include "berth/job/job.h"

namespace berth::federation {

inline constexpr TimeUs kNoExpiry = INT64_MAX;

// GPUs a job holds when admitted: its gang minimum x GPUs per task (at least
// one per task).
int64_t JobGpus(const job::JobSpec& spec);

// The entry of a job sent at a member: a lease until arrives + lease_ttl when
// it was promised free capacity (`type`: the card type promised on), else
// queued without one.
InFlight SentEntry(const job::JobSpec& spec, int64_t attempt, bool promise, int32_t type, TimeUs arrives,
                   TimeUs lease_ttl);

// A digest taken at `taken` arrived at `now`: drops the entries it reflects
// (sent to arrive by then) and the leases expired by `now`. Returns how many
// leases expired (not reflected).
int64_t ReflectDigest(std::vector<InFlight>& fl, TimeUs taken, TimeUs now);

// Drops the entry of `attempt` (the member admitted or refused it). Returns
// whether there was one.
bool ReleaseAttempt(std::vector<InFlight>& fl, int64_t attempt);

// Drops leases expired by `now` (entries without a lease stay). Returns how
// many.
int64_t ExpireLeases(std::vector<InFlight>& fl, TimeUs now);

}  // namespace berth::federation
