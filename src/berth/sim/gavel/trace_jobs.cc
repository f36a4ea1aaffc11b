// Trace jobs for the Gavel driver (see trace_jobs.h).
#include "berth/sim/gavel/trace_jobs.h"

#include <algorithm>
#include <numeric>

#include "berth/common/rng.h"

namespace berth::sim::gavel {

std::string TraceJobReport::Summary() const {
  std::string s = std::to_string(jobs) + " jobs";
  std::string sizes;
  for (const auto& [scale, n] : by_scale) sizes += (sizes.empty() ? "" : ", ") + std::to_string(n) + " x" +
                                                   std::to_string(scale);
  if (!sizes.empty()) s += " (" + sizes + " GPUs)";
  if (drawn > 0) s += "; " + std::to_string(drawn) + " classes drawn";
  const int64_t skipped = skipped_size + skipped_class + skipped_no_work;
  if (skipped > 0) {
    s += "; skipped " + std::to_string(skipped) + ":";
    if (skipped_size) s += " " + std::to_string(skipped_size) + " not 1/2/4/8 GPUs";
    if (skipped_class) s += " " + std::to_string(skipped_class) + " class not measured at its scale";
    if (skipped_no_work) s += " " + std::to_string(skipped_no_work) + " without steps or duration";
  }
  return s;
}

StatusOr<std::vector<GavelJob>> JobsFromTrace(const Trace& trace, const hetero::MeasuredTable& table,
                                              const hetero::Catalog& catalog, const TraceJobOptions& o,
                                              TraceJobReport* report) {
  const hetero::AcceleratorSpec* dtype = catalog.Find(o.duration_type);
  if (!dtype) return InvalidArgument("trace jobs: duration type '" + o.duration_type + "' is not in the catalog");
  // Models measured on the duration type, per scale factor (sorted by name).
  constexpr int32_t kScales[] = {1, 2, 4, 8};
  std::map<int32_t, std::vector<std::string>> models;
  for (const auto& c : table.Classes())
    if (table.Get(c, dtype->name, true).value_or(0.0) > 0) models[c.scale].push_back(c.model);
  if (models[1].empty()) return InvalidArgument("trace jobs: the throughput table has no single-GPU classes");

  // Submission order (stable: the trace's order among equal times).
  std::vector<size_t> order(trace.jobs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return trace.jobs[a].submit_time < trace.jobs[b].submit_time; });

  TraceJobReport rep;
  Rng rng(o.seed);
  std::vector<GavelJob> out;
  out.reserve(trace.jobs.size());
  TimeUs origin = 0;
  for (size_t i : order) {
    const job::JobSpec& spec = trace.jobs[i];
    int64_t gpus = 0;
    for (const auto& g : spec.groups) gpus += static_cast<int64_t>(g.count) * g.gpus;
    const int32_t scale = static_cast<int32_t>(gpus);
    if (std::find(std::begin(kScales), std::end(kScales), gpus) == std::end(kScales)) {
      ++rep.skipped_size;
      continue;
    }
    GavelJob j;
    j.job_class.scale = scale;
    if (!spec.job_class.empty()) {
      j.job_class.model = spec.job_class;
      if (table.Get(j.job_class, dtype->name, true).value_or(0.0) <= 0) {
        ++rep.skipped_class;
        continue;
      }
    } else {
      const auto& pool = models[scale];
      if (pool.empty()) {
        ++rep.skipped_class;
        continue;
      }
      j.job_class.model = pool[rng.Uniform(pool.size())];
      ++rep.drawn;
    }
    const double tput = *table.Get(j.job_class, dtype->name, true);
    if (spec.work_steps > 0) {
      j.total_steps = static_cast<double>(spec.work_steps);
      j.duration_s = j.total_steps / tput;
    } else if (spec.duration > 0) {
      j.duration_s = static_cast<double>(spec.duration) / 1e6;
      j.total_steps = j.duration_s * tput;
    } else {
      ++rep.skipped_no_work;
      continue;
    }
    if (out.empty()) origin = spec.submit_time;
    j.id = static_cast<int64_t>(out.size());
    j.arrival_s = static_cast<double>(spec.submit_time - origin) / 1e6;
    ++rep.by_scale[scale];
    out.push_back(std::move(j));
  }
  rep.jobs = static_cast<int64_t>(out.size());
  if (out.empty()) return InvalidArgument("trace jobs: no job left (" + rep.Summary() + ")");
  if (report) *report = std::move(rep);
  return out;
}

}  // namespace berth::sim::gavel
