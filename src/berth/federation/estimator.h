// The global dispatcher's estimate of where a job finishes soonest: for one
// (job, member) pair, from the member's digest as last received and the
// dispatcher's own in-flight ledger.
//
//   finish = dispatch delay (half the RTT from the dispatcher's region)
//          + max(expected wait, data staging)      (staging overlaps the wait)
//          + run time on the member's best card type (or the streaming time)
//
// Expected wait: 0 when the free capacity net of in-flight jobs holds the
// gang (`fits_now`); else the time at which the release profile has freed
// the GPUs the queue needs ahead of the job plus its own, and past the
// profile's end the normalized queue work over the member's GPUs. Run time:
// the job's duration scaled by the reference type's speed over the card
// type's (hetero throughput model). Staging: the dataset's bytes over the
// link from the replica that delivers first, after the transfers already
// queued on that link. Cost: GPUs x run hours x the type's price + GB moved x
// the link's egress price. A job resumed from a checkpoint (after its member
// failed) also moves the checkpoint from the region it was written in, over
// the same FIFO links, before it starts: staging waits for both.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "berth/federation/digest.h"
#include "berth/federation/federation.h"
#include "berth/job/job.h"

namespace berth::federation {

// Speed of each GPU type of each member relative to the trace's reference
// type (1 = the trace duration), [member][type index].
using SpeedTable = std::vector<std::vector<double>>;

struct DataMove {
  int32_t from_region = -1;  // -1: nothing to move (no dataset, or a local replica)
  MiB mib = 0;
  TimeUs transfer = 0;       // on the link, after what is queued there
  TimeUs ready = 0;          // absolute time the data is in place (staged) or the stream can start
  bool streamed = false;
  double egress_usd = 0;
};

// Where a job resumed after a member failure left its checkpoint (-1: none).
struct Checkpoint {
  int32_t region = -1;
  MiB mib = 0;
};

struct Estimate {
  int32_t member = -1;
  bool feasible = false;  // the member could ever run it (types, size, region rules)
  bool fits_now = false;
  int32_t type = -1;      // the card type chosen
  TimeUs delay = 0;       // dispatch delay
  TimeUs wait = 0;
  TimeUs run = 0;
  DataMove data;
  DataMove ckpt;          // the checkpoint's move (from_region -1: none)
  TimeUs finish = 0;      // absolute
  double gpu_usd = 0;
  double cost_usd() const { return gpu_usd + data.egress_usd + ckpt.egress_usd; }
  // When everything staged before the start is in place (absolute).
  TimeUs staged_ready() const { return std::max(data.streamed ? ckpt.ready : data.ready, ckpt.ready); }
};

// What the estimator reads besides the job.
struct EstimateContext {
  const Federation* fed = nullptr;
  const SpeedTable* speed = nullptr;
  std::span<const Digest> views;                       // per member, as received
  std::span<const char> stale;  // per member: true = its digest is known out of date (no promise there); may be empty
  std::span<const std::vector<InFlight>> in_flight;    // per member
  const std::vector<std::vector<TimeUs>>* link_busy = nullptr;  // [from][to]: link free again at
  // Per member, per type: the whole cluster empty (totals and blocks), for "can it ever run here".
  const std::vector<std::vector<TypeDigest>>* capacity = nullptr;
  // Per member: true = marked down (no job is sent there); may be empty.
  std::span<const char> down;
  TimeUs now = 0;
};

// The dataset a job reads (-1: none): its own `dataset` if the federation
// lists it, else one of its tenant's datasets by a hash of `job_key`.
int32_t JobDataset(const Federation& fed, const job::JobSpec& j, int64_t job_key);
// What the jobs in flight to member `m` take off its digest: GPUs and blocks
// of each size per type (of `types`), those sent without one of them apart.
struct InFlightUse {
  std::vector<int64_t> gpus;                   // per type
  std::vector<std::array<int64_t, 4>> blocks;  // per type, per kBlockSizes
  int64_t untyped_gpus = 0;
  std::array<int64_t, 4> untyped_blocks{};
  int64_t total_gpus = 0;                      // all of them
};
InFlightUse InFlightOn(const EstimateContext& ctx, int32_t m, size_t types);
// Whether every GPU group of `j` that names types accepts type `t` of `c`.
bool TypeAccepted(const job::JobSpec& j, const cluster::Cluster& c, GpuTypeId t);

// Whether member `m` may run job `j` at all: region pins and exclusions, a
// type it accepts with enough GPUs and nodes big enough for its tasks.
bool MemberAllowed(const EstimateContext& ctx, const job::JobSpec& j, int32_t m);

// How the job's data reaches member `m`'s region from dataset `ds` (-1: none).
DataMove PlanData(const EstimateContext& ctx, int32_t ds, int32_t m);
// How a checkpoint reaches member `m`'s region (staged; after `after` when
// that move uses the same link). Nothing to move: from_region -1, ready now.
DataMove PlanCheckpoint(const EstimateContext& ctx, const Checkpoint& c, int32_t m, const DataMove* after = nullptr);

// Which card type of the member the estimate runs the job on: the fastest
// accepted type (preferring one that holds the gang now), or the one doing
// the most work per dollar (speed / price), likewise.
enum class CardChoice { kFastest, kCheapest };

Estimate EstimateOn(const EstimateContext& ctx, const job::JobSpec& j, int32_t ds, int32_t m,
                    CardChoice choice = CardChoice::kFastest, const Checkpoint& ckpt = {});

}  // namespace berth::federation
