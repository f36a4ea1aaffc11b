// Wiring of `berth simulate --workload gavel`.
#include "berth/sim/gavel/gavel_sim.h"

#include <atomic>
#include <charconv>
#include <cstdio>

#include "berth/cluster/loaders.h"
#include "berth/hetero/normalize.h"
#include "berth/sim/gavel/round_driver.h"
#include "berth/sim/gavel/trace_jobs.h"
#include "berth/sim/gavel/workload.h"
#include "berth/sim/readers/readers.h"

namespace berth::sim::gavel {

StatusOr<std::pair<int64_t, int64_t>> ParseMeasureWindow(const std::string& text) {
  if (text.empty()) return std::make_pair<int64_t, int64_t>(-1, -1);
  const size_t colon = text.find(':');
  int64_t a = -1, b = -1;
  auto num = [](std::string_view s, int64_t& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size() && out >= 0;
  };
  if (colon == std::string::npos || !num(std::string_view(text).substr(0, colon), a) ||
      !num(std::string_view(text).substr(colon + 1), b) || b <= a)
    return InvalidArgument("--measure must be BEGIN:END job ids with BEGIN < END, not '" + text + "'");
  return std::make_pair(a, b);
}

StatusOr<SimulateOutput> RunGavelSimulation(const SimulateOptions& o) {
  BERTH_ASSIGN_OR_RETURN(auto window, ParseMeasureWindow(o.measure));
  if (!(o.round_s > 0)) return InvalidArgument("--round must be positive");
  BERTH_ASSIGN_OR_RETURN(hetero::Catalog catalog, hetero::LoadCatalog(o.catalog));
  BERTH_ASSIGN_OR_RETURN(hetero::MeasuredTable table, hetero::LoadGavelThroughputs(o.throughputs, catalog));
  BERTH_ASSIGN_OR_RETURN(hetero::ThroughputModel model, hetero::ThroughputModel::Fit(catalog, table));
  BERTH_ASSIGN_OR_RETURN(hetero::Normalizer normalizer, hetero::Normalizer::Create(model, o.reference_type));
  BERTH_ASSIGN_OR_RETURN(cluster::Cluster cluster, o.LoadClusterFile());

  SimulateOutput out;
  out.cluster_summary = cluster.Summary();
  // Jobs: Gavel's generator, or a trace with model classes mapped onto it.
  WorkloadOptions wo;
  std::vector<GavelJob> trace_jobs;
  if (!o.trace.empty()) {
    if (o.static_trace) return InvalidArgument("--static is for generated workloads, not with --trace");
    ReadOptions rd;
    rd.skip_bad_lines = o.skip_bad_lines;
    rd.max_jobs = o.max_jobs;
    rd.window_from = o.window_from;
    rd.window_to = o.window_to;
    rd.tenants = o.tenants;
    BERTH_ASSIGN_OR_RETURN(Trace trace, ReadTrace(o.trace, o.trace_format, rd));
    TraceJobOptions to;
    to.seed = o.seed;
    TraceJobReport rep;
    BERTH_ASSIGN_OR_RETURN(trace_jobs, JobsFromTrace(trace, table, catalog, to, &rep));
    out.trace_summary = trace.format + " as gavel jobs: " + trace.report.Summary() + "; " + rep.Summary() +
                        "; measured jobs " + (o.measure.empty() ? "all" : o.measure) + "; reference " +
                        normalizer.reference();
    out.trace_skips = trace.report.SkipDetails();
    out.trace_name = o.trace.substr(o.trace.find_last_of('/') == std::string::npos ? 0 : o.trace.find_last_of('/') + 1);
  } else {
    wo.num_jobs = o.max_jobs > 0 ? std::min(o.jobs, o.max_jobs) : o.jobs;
    wo.rate_per_hour = o.rate_per_hour;
    wo.static_trace = o.static_trace;
    // With a measured window, arrivals go on until the window has finished.
    wo.open = window.first >= 0 && !o.static_trace;
    wo.multi_gpu = o.multi_gpu;
    wo.priorities = o.priorities;
    wo.seed = o.seed;
    BERTH_RETURN_IF_ERROR(WorkloadGenerator::Create(wo, table, catalog).status());
    char rate_text[32], buf[256];
    std::snprintf(rate_text, sizeof rate_text, "%g jobs/h", o.rate_per_hour);
    std::snprintf(buf, sizeof buf, "%lld jobs%s, %s, %s%s; measured jobs %s; reference %s",
                  static_cast<long long>(wo.num_jobs), wo.open ? " (arrivals go on until the measured jobs end)" : "",
                  o.static_trace ? "static (all at t=0)" : rate_text, o.multi_gpu ? "multi-GPU" : "single-GPU",
                  o.priorities ? ", priorities" : "", o.measure.empty() ? "all" : o.measure.c_str(),
                  normalizer.reference().c_str());
    out.trace_summary = std::string("gavel: ") + buf;
    out.trace_name = "gavel";
  }
  RoundOptions ro;
  ro.round_s = o.round_s;
  ro.measure_begin = window.first;
  ro.measure_end = window.second;
  ro.seed = o.seed;
  ro.check_indexes = o.check_indexes;
  if (o.consolidation == "placement") ro.consolidation = Consolidation::kPlacement;
  else if (o.consolidation != "gavel")
    return InvalidArgument("--consolidation must be gavel or placement, not '" + o.consolidation + "'");
  if (o.mechanism == "deficit") ro.mechanism = Mechanism::kDeficit;
  else if (o.mechanism != "gavel")
    return InvalidArgument("--mechanism must be gavel or deficit, not '" + o.mechanism + "'");
  std::atomic<int64_t> finished{0};
  BERTH_RETURN_IF_ERROR(RunPerPolicy(o.policies.size(), o.threads, out, [&](size_t i) -> StatusOr<PolicyResult> {
    auto one = [&]() -> StatusOr<PolicyResult> {
      if (!o.trace.empty()) return RunGavelRounds(cluster, trace_jobs, model, normalizer, o.policies[i], ro);
      // Each run draws the same workload from a generator of its own.
      BERTH_ASSIGN_OR_RETURN(std::unique_ptr<WorkloadGenerator> gen, WorkloadGenerator::Create(wo, table, catalog));
      return RunGavelRounds(cluster, *gen, model, normalizer, o.policies[i], ro);
    };
    StatusOr<PolicyResult> r = one();
    if (o.progress) o.progress(finished.fetch_add(1) + 1, static_cast<int64_t>(o.policies.size()));
    return r;
  }));
  return out;
}

}  // namespace berth::sim::gavel
