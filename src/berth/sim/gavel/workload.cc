// Gavel workload generator (see workload.h).
#include "berth/sim/gavel/workload.h"

#include <cmath>

#include "berth/common/rng.h"

namespace berth::sim::gavel {

Status WorkloadOptions::Validate() const {
  if (num_jobs <= 0) return InvalidArgument("--jobs must be positive");
  if (!static_trace && !(rate_per_hour > 0)) return InvalidArgument("--rate must be positive (jobs per hour)");
  return Status::Ok();
}

StatusOr<std::vector<GavelJob>> GenerateWorkload(const WorkloadOptions& o, const hetero::MeasuredTable& table,
                                                 const hetero::Catalog& catalog) {
  BERTH_RETURN_IF_ERROR(o.Validate());
  const hetero::AcceleratorSpec* dtype = catalog.Find(o.duration_type);
  if (!dtype) return InvalidArgument("workload: duration type '" + o.duration_type + "' is not in the catalog");
  std::vector<std::string> models;
  std::vector<bool> distributed;
  for (const auto& c : table.Classes()) {
    if (c.scale != 1) continue;
    models.push_back(c.model);
    distributed.push_back(table.Get({c.model, 2}, dtype->name, true).has_value());
  }
  if (models.empty()) return InvalidArgument("workload: the throughput table has no single-GPU classes");
  bool any_distributed = false;
  for (bool d : distributed) any_distributed |= d;
  if (o.multi_gpu && !any_distributed) return InvalidArgument("workload: no model has multi-GPU throughputs");

  Rng rng(o.seed);
  std::vector<GavelJob> jobs;
  jobs.reserve(o.num_jobs);
  double t = 0;
  for (int64_t i = 0; i < o.num_jobs; ++i) {
    GavelJob j;
    j.id = i;
    if (!o.static_trace && i > 0) t += rng.Exponential(3600.0 / o.rate_per_hour);
    j.arrival_s = o.static_trace ? 0.0 : t;
    int32_t scale = 1;
    if (o.multi_gpu) {
      const double r = rng.UniformReal();
      scale = r < 0.7 ? 1 : r <= 0.8 ? 2 : r <= 0.95 ? 4 : 8;
    }
    size_t m;
    do {
      m = rng.Uniform(models.size());
    } while (scale > 1 && !distributed[m]);
    j.job_class = {models[m], scale};
    const bool long_job = rng.UniformReal() >= 0.8;
    const double u = rng.UniformReal();
    j.duration_s = long_job ? 60.0 * std::pow(10.0, 3.0 + u) : 60.0 * std::pow(10.0, 1.5 + 1.5 * u);
    if (o.priorities) j.weight = rng.UniformReal() < 0.2 ? 5.0 : 1.0;
    auto tput = table.Get(j.job_class, dtype->name, true);
    if (!tput || *tput <= 0)
      return InvalidArgument("workload: no " + dtype->name + " throughput for " + j.job_class.ToString());
    j.total_steps = j.duration_s * *tput;
    jobs.push_back(std::move(j));
  }
  return jobs;
}

}  // namespace berth::sim::gavel
