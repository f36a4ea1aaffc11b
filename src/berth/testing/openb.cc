// Reading the openb default inputs once.
#include "berth/testing/openb.h"

#include "berth/cluster/loaders.h"
#include "berth/sim/readers/readers.h"
#include "berth/testing/paths.h"

namespace berth::testing {

StatusOr<const OpenbInputs*> OpenbDefault() {
  static const StatusOr<const OpenbInputs*> loaded = []() -> StatusOr<const OpenbInputs*> {
    const std::string d = DataDir() + "/alibaba-gpu-v2023/";
    BERTH_ASSIGN_OR_RETURN(cluster::Cluster c, cluster::LoadCluster(d + "openb_node_list_gpu_node.csv"));
    BERTH_ASSIGN_OR_RETURN(sim::Trace t, sim::ReadTrace(d + "openb_pod_list_default.csv", "openb", {}));
    return new OpenbInputs{std::move(c), std::move(t)};  // lives as long as the process
  }();
  return loaded;
}

}  // namespace berth::testing
