// Gavel's synthetic workload (OSDI'20, scheduler/utils.py), drawn with
// Berth's seeded Rng, as documented in data/gavel/README.md:
//   - model: uniform over the table's models (26 for Gavel's), re-drawn
//     until one with multi-GPU measurements when the scale factor is > 1;
//   - duration: with prob. 0.8, 60 * 10^U(1.5, 3) s, else 60 * 10^U(3, 4) s;
//   - scale factor (multi-GPU traces only): r ~ U(0,1): 1 if r < 0.7,
//     2 if r <= 0.8, 4 if r <= 0.95, else 8;
//   - priority weight (optional): 5 with prob. 0.2, else 1;
//   - arrivals: Poisson at `rate_per_hour` (job 0 at t = 0), or all at t = 0
//     for a static trace;
//   - total steps = duration * the job's consolidated throughput on the
//     reference worker (V100).
// Per job the draws are, in order: inter-arrival, scale, model (re-draws),
// duration branch, duration exponent, priority.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "berth/common/status.h"
#include "berth/hetero/throughput.h"

namespace berth::sim::gavel {

struct WorkloadOptions {
  int64_t num_jobs = 6000;
  double rate_per_hour = 5.6;  // ignored when static_trace
  bool static_trace = false;
  bool multi_gpu = false;
  bool priorities = false;
  uint64_t seed = 0;
  std::string duration_type = "V100";  // whose throughput converts duration to steps

  Status Validate() const;
};

struct GavelJob {
  int64_t id = 0;
  hetero::JobClass job_class;  // model and scale factor
  double arrival_s = 0;
  double duration_s = 0;       // on the duration type, consolidated
  double total_steps = 0;
  double weight = 1;
};

// Draws the workload. Models are the table's classes with scale 1, sorted by
// name; multi-GPU-capable ones are those measured at scale 2.
StatusOr<std::vector<GavelJob>> GenerateWorkload(const WorkloadOptions& options, const hetero::MeasuredTable& table,
                                                 const hetero::Catalog& catalog);

}  // namespace berth::sim::gavel
