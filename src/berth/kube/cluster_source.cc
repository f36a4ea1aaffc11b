// Dispatch between Kubernetes NodeLists and the cluster loaders.
#include "berth/kube/cluster_source.h"

#include "berth/cluster/loaders.h"

namespace berth::kube {

bool IsNodeListPath(const std::string& path_or_spec) {
  const std::string ext = ".json";
  return path_or_spec.size() > ext.size() &&
         path_or_spec.compare(path_or_spec.size() - ext.size(), ext.size(), ext) == 0;
}

StatusOr<cluster::Cluster> LoadClusterSource(const std::string& path_or_spec, const NodeModelOptions& options) {
  if (IsNodeListPath(path_or_spec)) return LoadNodeList(path_or_spec, options);
  return cluster::LoadCluster(path_or_spec);
}

}  // namespace berth::kube
