// Jobs of a real trace for the Gavel round driver (`berth simulate
// --workload gavel --trace FILE`): each job needs a model class, so the
// throughput model can give its speed on every accelerator type, and a
// number of training steps.
//
// Mapping, per job in submission order:
//   - GPUs: the job's total GPU count; the class's scale factor. Only 1, 2,
//     4 and 8 are kept (the scales Gavel measured); other sizes are skipped
//     and counted (0.35% of the Philly jobs: 12 to 128 GPUs).
//   - class: the trace's own (Gavel traces) when the table measures it at
//     that scale; otherwise (Philly, which names no model) drawn uniformly,
//     with the seeded Rng, over the table's models measured at that scale -
//     26 models for one GPU, the 19 distributed ones for 2, 4 and 8 - which
//     is how Gavel assigned models to its own Philly-derived traces and how
//     its generator draws them.
//   - steps: the trace's step count when it has one; else the job's duration
//     times the class's consolidated throughput on the duration type (V100):
//     the recorded run time is taken as the run time on a V100, the
//     convention of Gavel's generator.
//   - arrival: submission time, from the first job's; weight 1.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "berth/common/status.h"
#include "berth/hetero/throughput.h"
#include "berth/sim/gavel/workload.h"
#include "berth/sim/trace.h"

namespace berth::sim::gavel {

struct TraceJobOptions {
  uint64_t seed = 0;
  std::string duration_type = "V100";
};

struct TraceJobReport {
  int64_t jobs = 0;
  int64_t drawn = 0;               // classes drawn (the trace named none)
  int64_t skipped_size = 0;        // GPU count not 1, 2, 4 or 8
  int64_t skipped_class = 0;       // named class not measured at its scale
  int64_t skipped_no_work = 0;     // neither steps nor a positive duration
  std::map<int32_t, int64_t> by_scale;
  std::string Summary() const;
};

StatusOr<std::vector<GavelJob>> JobsFromTrace(const Trace& trace, const hetero::MeasuredTable& table,
                                              const hetero::Catalog& catalog, const TraceJobOptions& options,
                                              TraceJobReport* report = nullptr);

}  // namespace berth::sim::gavel
