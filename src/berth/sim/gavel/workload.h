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
//     reference worker (V100);
//   - a continuous trace may be open: arrivals go on past num_jobs (Gavel's
//     sweeps generate jobs until the measured ones have finished, so the
//     measured jobs never see the load drop).
// Per job the draws are, in order: inter-arrival, scale, model (re-draws),
// duration branch, duration exponent, priority.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "berth/common/rng.h"
#include "berth/common/status.h"
#include "berth/hetero/throughput.h"

namespace berth::sim::gavel {

struct WorkloadOptions {
  int64_t num_jobs = 6000;
  // Keep generating past num_jobs (a continuous trace whose arrivals go on
  // until the measured jobs have finished, as in Gavel's simulator).
  bool open = false;
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

// Jobs in arrival order with ids 0, 1, 2, ...; the round driver pulls them as
// simulated time reaches their arrival.
class JobSource {
 public:
  virtual ~JobSource() = default;
  // The next job, or nullopt once the stream has ended.
  virtual std::optional<GavelJob> Next() = 0;
};

// A fixed list of jobs.
class VectorSource final : public JobSource {
 public:
  explicit VectorSource(std::span<const GavelJob> jobs) : jobs_(jobs) {}
  std::optional<GavelJob> Next() override {
    if (next_ >= jobs_.size()) return std::nullopt;
    return jobs_[next_++];
  }

 private:
  std::span<const GavelJob> jobs_;
  size_t next_ = 0;
};

// Draws the workload job by job. Models are the table's classes with scale 1,
// sorted by name; those measured at scale 2 are multi-GPU capable.
class WorkloadGenerator final : public JobSource {
 public:
  static StatusOr<std::unique_ptr<WorkloadGenerator>> Create(const WorkloadOptions& options,
                                                             const hetero::MeasuredTable& table,
                                                             const hetero::Catalog& catalog);
  std::optional<GavelJob> Next() override;

 private:
  WorkloadGenerator(const WorkloadOptions& o, uint64_t seed) : o_(o), rng_(seed) {}
  WorkloadOptions o_;
  Rng rng_;
  std::vector<std::string> models_;
  std::vector<bool> distributed_;
  // Throughput on the duration type per model, for scale factors 1, 2, 4, 8
  // (0: not measured, so not drawn at that scale).
  std::vector<std::array<double, 4>> tput_;
  int64_t next_id_ = 0;
  double t_ = 0;
};

// The first options.num_jobs jobs of the generator.
StatusOr<std::vector<GavelJob>> GenerateWorkload(const WorkloadOptions& options, const hetero::MeasuredTable& table,
                                                 const hetero::Catalog& catalog);

}  // namespace berth::sim::gavel
