// Every way a command names a cluster, Kubernetes NodeLists included: a path
// ending in .json is read as a NodeList (`kubectl get nodes -o json`) with
// the node model; anything else goes to cluster::LoadCluster (compact spec,
// YAML, CSV). cluster/ cannot see kube/, so commands call this instead.
//
//   StatusOr<cluster::Cluster> c = LoadClusterSource("nodes.json", options);
#pragma once

#include <string>

#include "berth/cluster/cluster.h"
#include "berth/common/status.h"
#include "berth/kube/node_model.h"

namespace berth::kube {

bool IsNodeListPath(const std::string& path_or_spec);

StatusOr<cluster::Cluster> LoadClusterSource(const std::string& path_or_spec, const NodeModelOptions& options);

}  // namespace berth::kube
