// The list of built-in plugins and the named policies built from them.
#include "berth/plugins/builtin.h"

namespace berth::plugins {

using framework::PluginRef;
using framework::Profile;

Status RegisterBuiltinPlugins(framework::PluginRegistry& r) {
  BERTH_RETURN_IF_ERROR(RegisterQueueSortPlugins(r));
  BERTH_RETURN_IF_ERROR(RegisterFilterPlugins(r));
  BERTH_RETURN_IF_ERROR(RegisterScorePlugins(r));
  BERTH_RETURN_IF_ERROR(RegisterGangPlugins(r));
  BERTH_RETURN_IF_ERROR(RegisterTopologyPlugins(r));
  BERTH_RETURN_IF_ERROR(RegisterFgdPlugins(r));
  BERTH_RETURN_IF_ERROR(RegisterCandidatePlugins(r));
  BERTH_RETURN_IF_ERROR(RegisterFragPlugins(r));
  BERTH_RETURN_IF_ERROR(RegisterQuotaPlugins(r));
  BERTH_RETURN_IF_ERROR(RegisterPreemptionPlugins(r));
  BERTH_RETURN_IF_ERROR(RegisterBackfillPlugins(r));
  BERTH_RETURN_IF_ERROR(RegisterSpreadPlugins(r));
  BERTH_RETURN_IF_ERROR(RegisterColocationPlugins(r));
  BERTH_RETURN_IF_ERROR(RegisterGoodputPlugins(r));
  return Status::Ok();
}

namespace {
// A placement policy: FIFO order, the fit filter, one score plugin, gang permit.
Profile Placement(const std::string& score, std::string queue_sort = "fifo") {
  Profile p;
  p.queue_sort = std::move(queue_sort);
  p.filter = {PluginRef{"fit"}};
  if (!score.empty()) p.score = {PluginRef{score}};
  p.permit = {PluginRef{"gang"}};
  return p;
}
}  // namespace

Status RegisterBuiltinPolicies(framework::PolicyRegistry& r) {
  struct Entry {
    const char* name;
    const char* score;
    const char* queue_sort;
    bool hol;
    const char* description;
  };
  static const Entry kEntries[] = {
      {"firstfit", "firstfit", "fifo", false, "first feasible node in rank order"},
      {"bestfit", "bestfit", "fifo", false, "least CPU+GPU left after placement (FGD paper's BestFit)"},
      {"dotprod", "dotprod", "fifo", false, "least alignment of free and requested CPU/GPU (FGD paper's DotProd)"},
      {"gpupacking", "gpupacking", "fifo", false, "partly used GPUs, then used nodes, then idle nodes (FGD paper's GpuPacking)"},
      {"gpuclustering", "gpuclustering", "fifo", false, "nodes holding tasks of the same GPU demand (FGD paper's GpuClustering)"},
      {"random", "random", "fifo", false, "a uniformly random feasible node and GPU (FGD paper's Random)"},
      {"worstfit", "worstfit", "fifo", false, "spread: most CPU+GPU left after placement"},
      {"fgd", "fgd", "fifo", false, "least growth of GPU fragmentation under the workload's typical pods (FGD, ATC'23)"},
      {"berth-frag", "berth-frag", "fifo", false, "least expected waste: look-ahead fragmentation plus stranded CPU (beats FGD on every openb variant)"},
      {"fifo", "bestfit", "fifo", true, "strict first-come first-served order, best-fit placement"},
      {"sjf", "bestfit", "sjf", false, "shortest job first (known or declared runtime), best-fit placement"},
      {"priority", "bestfit", "priority", false, "highest priority first, best-fit placement"},
  };
  for (const auto& e : kEntries) {
    Profile p = Placement(e.score, e.queue_sort);
    p.head_of_line_blocking = e.hol;
    BERTH_RETURN_IF_ERROR(r.Register(e.name, std::move(p), e.description));
  }
  {
    // Topology-aware gangs (plan), best fit for single tasks.
    Profile p = Placement("bestfit");
    p.plan = {PluginRef{"topology"}};
    BERTH_RETURN_IF_ERROR(r.Register("topology", std::move(p),
                                     "gangs in the narrowest topology domain that holds them, best fit for the rest"));
  }
  {
    // The same, steering long, large gangs away from domains that failed lately.
    Profile p = Placement("bestfit");
    p.plan = {PluginRef{"topology-reliable"}};
    BERTH_RETURN_IF_ERROR(r.Register("topology-reliable", std::move(p),
                                     "topology, and long large gangs go to the domains with the fewest recent "
                                     "failures first (with --failures)"));
  }
  Profile binpack = Placement("binpack");
  binpack.candidates = {PluginRef{"binpack"}};
  BERTH_RETURN_IF_ERROR(r.Register("binpack", std::move(binpack),
                                   "fewest free GPUs left on the node, from the state's indexes (no full scan)"));
  BERTH_RETURN_IF_ERROR(RegisterGoodputPolicy(r));
  return RegisterTenancyPolicies(r);
}

}  // namespace berth::plugins
