// Gangs across regions: how the dispatcher splits the gang of a job with
// `span_regions: true` into parts on members of different regions, and how
// long and how much traffic such a gang then costs (docs/federation.md,
// "Gangs across regions"; docs/adr/0039-gangs-across-regions.md).
//
//   if (Splittable(spec)) {
//     SpanPlan p = PlanSpan(ctx, request);   // parts that all fit now, or none
//     if (!p.parts.empty()) ...              // send every part under a lease
//   }
//
// A part is a whole number of the gang's tasks: PartSpec(spec, tasks) is the
// job a member receives. Only single-group gangs of whole-GPU tasks, all or
// nothing (no gang minimum below the count, not elastic), are split; parts go
// to members of different regions (one part per region, at most
// Federation::span.max_parts). The plan takes the fewest parts that hold the
// gang now (the digests' free capacity net of the in-flight ledger); among
// those, the best link between the parts (the ring's narrowest bandwidth,
// then its longest RTT), then the earliest finish, then the lowest member ids.
//
// Run-time model. The parts are joined in a ring in plan order (the largest
// part first); the ring's bottleneck is its narrowest link (bandwidth B_x,
// and its longest RTT), B_i the narrowest intra-region bandwidth of the
// parts' regions, f = span.comm_fraction, S the job's remaining steps
// (work_steps, 0 when not known), T the run on the slowest part's card:
//
//   run = T x ((1 - f) + f x max(1, B_i / B_x)) + S x RTT
//
// e.g. f = 0.1, 100 Gbit/s inside a region and 10 Gbit/s between:
// 0.9 + 0.1 x 10 = 1.9 x the single-region run.
//
// Traffic. Each part's GPUs send span.gib_per_gpu_hour GiB per GPU-hour of
// job (trace reference) time over the ring link to the next part's region:
// part p of g_p GPUs running W hours of job time sends rate x g_p x W GiB,
// priced at that link's egress.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "berth/federation/dispatch.h"
#include "berth/federation/estimator.h"

namespace berth::federation {

// Whether the dispatcher may split this job's gang: span_regions, one group
// of at least two whole-GPU tasks, all or nothing, not elastic.
bool Splittable(const job::JobSpec& j);

// The job a part of `tasks` tasks is: the same job with its group's count
// (and gang minimum) set to `tasks`.
job::JobSpec PartSpec(const job::JobSpec& j, int32_t tasks);

// The ring of regions a spanning gang's parts sit in (in part order).
struct SpanRing {
  double bandwidth_gbps = 0;  // narrowest ring link
  TimeUs rtt = 0;             // longest ring link RTT
  double intra_gbps = 0;      // narrowest intra-region bandwidth of the parts' regions
};
SpanRing RingOf(const Federation& fed, std::span<const int32_t> regions);

// The run of a spanning gang: `base` (the run on the slowest part's card, in
// one region) stretched by the model above, plus `steps` x the ring's RTT.
TimeUs SpanRunTime(const Federation& fed, const SpanRing& ring, TimeUs base, int64_t steps);

// The inter-region bytes and egress of part `k` (of `gpus` GPUs) of a gang
// in `regions` (part order) for `work` of job time.
struct SpanTraffic {
  double bytes = 0;
  double egress_usd = 0;
};
SpanTraffic PartTraffic(const Federation& fed, std::span<const int32_t> regions, size_t k, int64_t gpus, TimeUs work);

struct SpanPart {
  int32_t member = -1;
  int32_t tasks = 0;
  Estimate estimate;  // of the part alone on its member (fits now; its data and checkpoint share)
};

struct SpanPlan {
  std::vector<SpanPart> parts;  // empty: no split holds the gang now
  TimeUs run = 0;               // the spanning run (model above)
  TimeUs finish = 0;            // estimated (absolute): every part in place and admitted, then the run
  double cost_usd = 0;          // GPUs held x price + data, checkpoint and traffic egress
  // Whether some split could ever hold it on the members allowed (down
  // members counted as up): without one, a job no member holds whole is lost.
  bool could_ever = false;
};

// The plan for request `r` (Splittable) from the digests and the ledger of
// `ctx`. The checkpoint of a resumed job is moved to each part in shares of
// its tasks.
SpanPlan PlanSpan(const EstimateContext& ctx, const Request& r);

}  // namespace berth::federation
