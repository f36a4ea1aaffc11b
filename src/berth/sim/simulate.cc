// Wiring of a simulation: cluster, trace, registries, one run per policy.
#include "berth/sim/simulate.h"

#include "berth/cluster/loaders.h"
#include "berth/plugins/builtin.h"
#include "berth/sim/fgd_protocol.h"
#include "berth/sim/gavel/gavel_sim.h"
#include "berth/sim/readers/readers.h"

namespace berth::sim {

Status SimulateOptions::Validate() const {
  if (cluster.empty()) return InvalidArgument("--cluster is required");
  if (!workload.empty() && workload != "gavel")
    return InvalidArgument("--workload must be gavel, not '" + workload + "'");
  if (trace.empty() && workload.empty()) return InvalidArgument("--trace is required");
  if (policies.empty()) return InvalidArgument("--policy is required");
  if (!mode.empty() && mode != "fgd" && mode != "replay")
    return InvalidArgument("--mode must be fgd or replay, not '" + mode + "'");
  if (load <= 0 || load > 100) return InvalidArgument("--load must be in (0, 100]");
  return Status::Ok();
}

StatusOr<SimulateOutput> RunSimulation(const SimulateOptions& o) {
  BERTH_RETURN_IF_ERROR(o.Validate());
  if (o.workload == "gavel") return gavel::RunGavelSimulation(o);
  framework::PluginRegistry plugins;
  BERTH_RETURN_IF_ERROR(plugins::RegisterBuiltinPlugins(plugins));
  framework::PolicyRegistry policies;
  BERTH_RETURN_IF_ERROR(plugins::RegisterBuiltinPolicies(policies));
  std::vector<framework::Profile> profiles;
  for (const auto& name : o.policies) {
    BERTH_ASSIGN_OR_RETURN(framework::Profile p, policies.Find(name));
    profiles.push_back(std::move(p));
  }
  BERTH_ASSIGN_OR_RETURN(cluster::Cluster cluster, cluster::LoadCluster(o.cluster));
  ReadOptions ro;
  ro.skip_bad_lines = o.skip_bad_lines;
  ro.max_jobs = o.max_jobs;
  BERTH_ASSIGN_OR_RETURN(Trace trace, ReadTrace(o.trace, o.trace_format, ro));
  const std::string mode = !o.mode.empty() ? o.mode : trace.format == "openb" ? "fgd" : "replay";

  SimulateOutput out;
  out.cluster_summary = cluster.Summary();
  out.trace_summary = trace.format + ": " + trace.report.Summary();
  out.trace_skips = trace.report.SkipDetails();
  out.trace_name = o.trace.substr(o.trace.find_last_of('/') == std::string::npos ? 0 : o.trace.find_last_of('/') + 1);
  if (mode == "fgd") {
    FgdOptions fo;
    fo.load = o.load;
    fo.seed = o.seed;
    fo.arrival_order_file = o.arrival_order;
    fo.node_rank_file = o.node_rank;
    fo.record_placements = o.record_placements;
    fo.check_indexes = o.check_indexes;
    BERTH_ASSIGN_OR_RETURN(FgdInput input, BuildFgdInput(cluster, trace, fo));
    for (size_t i = 0; i < profiles.size(); ++i) {
      BERTH_ASSIGN_OR_RETURN(PolicyResult r, RunFgd(cluster, input, profiles[i], plugins, fo));
      out.results.push_back(std::move(r));
      if (o.progress) o.progress(static_cast<int64_t>(i + 1), static_cast<int64_t>(profiles.size()));
    }
    return out;
  }
  return Unavailable("--mode replay is not available yet");
}

}  // namespace berth::sim
