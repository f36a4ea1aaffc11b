// The unit the queue tree counts in: raw GPUs, or normalized GPUs
// ("H100-equivalents"): a GPU of type t running job j counts
// speed(j, t) / speed(j, reference) reference GPUs. Quantities stay integers:
// milli-GPU, or milli-reference-GPU (1000 = one H100-equivalent).
//
// The ledger converts with a SpeedModel (tenancy sees no throughput model:
// hetero implements it from the measured table per job class, else the
// spec-based estimate). A factor is an integer in millionths:
//
//   charge = round(milli_gpu x PerMillion(job, type) / 1e6)
//
//   8 K80 for ResNet-50 against H100: PerMillion ~ 62,000 -> 8000 x 0.062 = 499 milli-H100.
//   capacity of a type = its milli-GPU x CapacityPerMillion(type) / 1e6
//
// A model must answer the same for the same (job, type) for as long as a
// ledger uses it (a start and its end are charged and uncharged alike).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "berth/common/ids.h"
#include "berth/common/status.h"
#include "berth/job/job.h"

namespace berth::tenancy {

enum class Unit { kGpus, kNormalized };

// "gpus" / "normalized".
const char* UnitName(Unit u);
StatusOr<Unit> ParseUnit(std::string_view text);

inline constexpr int64_t kPerMillion = 1'000'000;

class SpeedModel {
 public:
  virtual ~SpeedModel() = default;
  // Reference GPUs per GPU of `type` for `job`, in millionths (> 0).
  virtual int64_t PerMillion(const job::JobSpec& job, GpuTypeId type) const = 0;
  // The same for a job of no known class (what a GPU of the type is worth
  // when nobody runs on it: the capacity in the unit).
  virtual int64_t CapacityPerMillion(GpuTypeId type) const = 0;
  // The reference type's canonical name ("H100").
  virtual const std::string& reference() const = 0;
};

// milli x per_million / 1e6, rounded to nearest (half away from zero).
inline int64_t ScaleMilli(int64_t milli, int64_t per_million) {
  const __int128 p = static_cast<__int128>(milli) * per_million;
  const __int128 half = kPerMillion / 2;
  return static_cast<int64_t>(p >= 0 ? (p + half) / kPerMillion : -((-p + half) / kPerMillion));
}

}  // namespace berth::tenancy
