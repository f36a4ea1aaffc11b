// Gavel workload generator (see workload.h).
#include "berth/sim/gavel/workload.h"

#include <cmath>

#include "berth/common/rng.h"

namespace berth::sim::gavel {

Status WorkloadOptions::Validate() const {
  if (num_jobs <= 0) return InvalidArgument("--jobs must be positive");
  if (!static_trace && !(rate_per_hour > 0)) return InvalidArgument("--rate must be positive (jobs per hour)");
  if (static_trace && open) return InvalidArgument("a static trace cannot have open arrivals");
  return Status::Ok();
}

namespace {
int ScaleIndex(int32_t scale) { return scale == 1 ? 0 : scale == 2 ? 1 : scale == 4 ? 2 : 3; }
}  // namespace

StatusOr<std::unique_ptr<WorkloadGenerator>> WorkloadGenerator::Create(const WorkloadOptions& o,
                                                                       const hetero::MeasuredTable& table,
                                                                       const hetero::Catalog& catalog) {
  BERTH_RETURN_IF_ERROR(o.Validate());
  const hetero::AcceleratorSpec* dtype = catalog.Find(o.duration_type);
  if (!dtype) return InvalidArgument("workload: duration type '" + o.duration_type + "' is not in the catalog");
  std::unique_ptr<WorkloadGenerator> g(new WorkloadGenerator(o, o.seed));
  for (const auto& c : table.Classes()) {
    if (c.scale != 1) continue;
    std::array<double, 4> tput{};
    for (int32_t s : {1, 2, 4, 8}) tput[ScaleIndex(s)] = table.Get({c.model, s}, dtype->name, true).value_or(0.0);
    if (tput[0] <= 0) return InvalidArgument("workload: no " + dtype->name + " throughput for " + c.ToString());
    g->models_.push_back(c.model);
    g->distributed_.push_back(tput[1] > 0);
    g->tput_.push_back(tput);
  }
  if (g->models_.empty()) return InvalidArgument("workload: the throughput table has no single-GPU classes");
  bool any_distributed = false;
  for (size_t m = 0; m < g->models_.size(); ++m)
    any_distributed |= g->distributed_[m] && g->tput_[m][2] > 0 && g->tput_[m][3] > 0;
  if (o.multi_gpu && !any_distributed)
    return InvalidArgument("workload: no model has multi-GPU throughputs at scale 2, 4 and 8");
  return g;
}

std::optional<GavelJob> WorkloadGenerator::Next() {
  if (!o_.open && next_id_ >= o_.num_jobs) return std::nullopt;
  GavelJob j;
  j.id = next_id_;
  if (!o_.static_trace && next_id_ > 0) t_ += rng_.Exponential(3600.0 / o_.rate_per_hour);
  j.arrival_s = o_.static_trace ? 0.0 : t_;
  int32_t scale = 1;
  if (o_.multi_gpu) {
    const double r = rng_.UniformReal();
    scale = r < 0.7 ? 1 : r <= 0.8 ? 2 : r <= 0.95 ? 4 : 8;
  }
  size_t m;
  do {
    m = rng_.Uniform(models_.size());
  } while (scale > 1 && !(distributed_[m] && tput_[m][ScaleIndex(scale)] > 0));
  j.job_class = {models_[m], scale};
  const bool long_job = rng_.UniformReal() >= 0.8;
  const double u = rng_.UniformReal();
  j.duration_s = long_job ? 60.0 * std::pow(10.0, 3.0 + u) : 60.0 * std::pow(10.0, 1.5 + 1.5 * u);
  if (o_.priorities) j.weight = rng_.UniformReal() < 0.2 ? 5.0 : 1.0;
  j.total_steps = j.duration_s * tput_[m][ScaleIndex(scale)];
  ++next_id_;
  return j;
}

StatusOr<std::vector<GavelJob>> GenerateWorkload(const WorkloadOptions& o, const hetero::MeasuredTable& table,
                                                 const hetero::Catalog& catalog) {
  WorkloadOptions closed = o;
  closed.open = false;
  BERTH_ASSIGN_OR_RETURN(std::unique_ptr<WorkloadGenerator> g, WorkloadGenerator::Create(closed, table, catalog));
  std::vector<GavelJob> jobs;
  jobs.reserve(o.num_jobs);
  while (auto j = g->Next()) jobs.push_back(std::move(*j));
  return jobs;
}

}  // namespace berth::sim::gavel
