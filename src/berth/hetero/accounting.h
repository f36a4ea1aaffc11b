// Quota and usage accounting in normalized units, for a queue tree built on
// top (this file knows queues only by name). A queue's quota has two parts:
//   - type-specific quotas: whole GPUs of one type ("16 V100");
//   - a fungible pool in reference-equivalents (MilliRef), usable on any type
//     and charged at the job's equivalents for its class on that type.
// A job is charged against its type's quota first; the GPUs that do not fit
// there are charged to the fungible pool at their equivalents. So a tenant on
// slow cards uses up less of the pool than one on fast cards for the same
// GPU count. Usage accrues in reference-GPU-seconds (and raw GPU-seconds) for
// fair share.
//
//   QuotaLedger ledger(normalizer);
//   ledger.SetQuota("team-a", {.type_gpus = {{"V100-16", 8}}, .fungible = 4 * kMilliPerRef});
//   StatusOr<Charge> c = ledger.Admit("team-a", JobId(7), cls, "K80", 4);
//   ledger.Accrue(seconds);  ledger.Release(JobId(7));
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "berth/common/ids.h"
#include "berth/common/status.h"
#include "berth/hetero/normalize.h"

namespace berth::hetero {

struct QueueQuota {
  std::map<std::string, int64_t> type_gpus;  // canonical type name -> GPUs
  MilliRef fungible = 0;
  double weight = 1.0;  // fair-share weight
};

// What one job holds: from its type's quota and from the fungible pool.
struct Charge {
  std::string queue;
  std::string type;  // canonical name
  int64_t gpus = 0;
  int64_t gpus_from_type_quota = 0;
  MilliRef from_fungible = 0;  // equivalents of the GPUs beyond the type quota
  MilliRef equivalents = 0;    // equivalents of all its GPUs (for usage)
};

struct QueueUsage {
  std::map<std::string, int64_t> type_gpus_in_use;
  MilliRef fungible_in_use = 0;
  MilliRef equivalents_in_use = 0;
  int64_t gpus_in_use = 0;
  double ref_gpu_seconds = 0;  // accrued, in reference-GPU-seconds
  double raw_gpu_seconds = 0;
};

class QuotaLedger {
 public:
  explicit QuotaLedger(const Normalizer& normalizer) : normalizer_(normalizer) {}

  // Sets (or replaces) a queue's quota. Types are catalog names or aliases.
  Status SetQuota(const std::string& queue, QueueQuota quota);
  // What admitting the job would charge, without charging. FailedPrecondition
  // (naming the queue and the shortfall) when it does not fit.
  StatusOr<Charge> Plan(const std::string& queue, const JobClass& c, const std::string& type, int64_t gpus) const;
  // Plan, then hold the charge for `job` until Release.
  StatusOr<Charge> Admit(const std::string& queue, JobId job, const JobClass& c, const std::string& type,
                         int64_t gpus);
  Status Release(JobId job);
  // Adds `seconds` of every held charge to its queue's usage.
  void Accrue(double seconds);

  const QueueUsage* usage(const std::string& queue) const;
  const QueueQuota* quota(const std::string& queue) const;
  // Fair-share key: accrued reference-GPU-seconds / weight (lower = more deserving).
  double WeightedUsage(const std::string& queue) const;
  // Queues ordered by WeightedUsage, ties by name.
  std::vector<std::string> FairShareOrder() const;
  const Normalizer& normalizer() const { return normalizer_; }

 private:
  const Normalizer& normalizer_;
  std::map<std::string, QueueQuota> quotas_;
  std::map<std::string, QueueUsage> usage_;
  std::map<JobId, Charge> held_;
};

}  // namespace berth::hetero
