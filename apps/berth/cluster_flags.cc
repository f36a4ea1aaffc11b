// --cluster loading with Kubernetes NodeLists (see cluster_flags.h).
#include "cluster_flags.h"

#include <iostream>
#include <memory>

#include "berth/cluster/loaders.h"
#include "berth/cluster/node_labels.h"
#include "berth/hetero/catalog.h"
#include "berth/hetero/catalog_aliases.h"
#include "berth/kube/cluster_source.h"

namespace berth::apps {

void AddTopologyLabelOption(CLI::App* cmd, std::vector<std::string>* labels) {
  cmd->add_option("--topology-label", *labels,
                  "Kubernetes NodeList clusters: LABEL=LEVEL, a node label that gives a topology level (region, "
                  "cluster, spine, leaf, nvlink), checked before the built-in keys; repeatable, e.g. "
                  "example.com/rack=leaf")
      ->take_all();
}

StatusOr<ClusterLoader> MakeClusterLoader(const std::string& cluster, const std::vector<std::string>& topology_labels,
                                          const std::string& catalog_path, bool catalog_required) {
  kube::NodeModelOptions options;
  for (const auto& text : topology_labels) {
    StatusOr<std::pair<std::string, cluster::Level>> entry = cluster::ParseTopologyLabel(text);
    if (!entry.ok()) return InvalidArgument("--topology-label " + entry.status().message());
    options.levels.push_back(std::move(entry).value());
  }
  if (!topology_labels.empty() && !kube::IsNodeListPath(cluster))
    return InvalidArgument("--topology-label applies to a Kubernetes NodeList (--cluster FILE.json), not '" + cluster +
                           "'");
  return ClusterLoader(
      [options, catalog_path, catalog_required](const std::string& path_or_spec) -> StatusOr<cluster::Cluster> {
        StatusOr<hetero::Catalog> catalog = hetero::LoadCatalog(catalog_path);
        if (!kube::IsNodeListPath(path_or_spec)) {
          StatusOr<cluster::Cluster> c = cluster::LoadCluster(path_or_spec);
          if (c.ok() && catalog.ok()) hetero::AddCatalogAliases(*catalog, *c);
          if (c.ok() && !catalog.ok() && catalog_required)
            return InvalidArgument("--catalog: " + catalog.status().message());
          return c;
        }
        kube::NodeModelOptions o = options;
        if (catalog.ok()) {
          o.catalog = &*catalog;
        } else if (catalog_required || catalog.status().code() != StatusCode::kNotFound) {
          return InvalidArgument("--catalog (GPU products of the NodeList): " + catalog.status().message());
        } else {
          std::cerr << "note: " << catalog.status().message()
                    << "; GPU types are the nodes' nvidia.com/gpu.product labels as written (pass --catalog)\n";
        }
        StatusOr<cluster::Cluster> c = kube::LoadNodeList(path_or_spec, o);
        if (c.ok() && catalog.ok()) hetero::AddCatalogAliases(*catalog, *c);
        return c;
      });
}

}  // namespace berth::apps
