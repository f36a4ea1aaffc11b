// How a command's --cluster value is read, shared by the commands that take
// one (simulate; serve can add the same flag): Kubernetes NodeLists (.json)
// go through the node model with the --topology-label mappings and the
// accelerator catalog, everything else through cluster::LoadCluster.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/common/status.h"

namespace berth::apps {

using ClusterLoader = std::function<StatusOr<cluster::Cluster>(const std::string&)>;

// Adds the repeatable --topology-label LABEL=LEVEL option to `cmd`.
void AddTopologyLabelOption(CLI::App* cmd, std::vector<std::string>* labels);

// A loader for --cluster values. `topology_labels` are LABEL=LEVEL texts;
// `catalog_path` is the accelerator catalog that GPU products resolve
// through, read when a NodeList is loaded. When the catalog cannot be read,
// the load fails if `catalog_required` (the user named it); else a note goes
// to stderr and GPU types are the product labels as written.
// InvalidArgument (naming the flag) on a malformed label, or labels given
// for a cluster that is not a NodeList.
StatusOr<ClusterLoader> MakeClusterLoader(const std::string& cluster, const std::vector<std::string>& topology_labels,
                                          const std::string& catalog_path, bool catalog_required = true);

}  // namespace berth::apps
