// Catalog names as cluster GPU type aliases.
#include "berth/hetero/catalog_aliases.h"

namespace berth::hetero {

void AddCatalogAliases(const Catalog& catalog, cluster::Cluster& cluster) {
  for (size_t i = 0; i < cluster.gpu_types().size(); ++i) {
    const AcceleratorSpec* spec = catalog.Find(cluster.gpu_types()[i].name);
    if (!spec) continue;
    const GpuTypeId type(static_cast<int16_t>(i));
    cluster.AddGpuTypeAlias(spec->name, type);
    for (const std::string& alias : spec->aliases) cluster.AddGpuTypeAlias(alias, type);
  }
}

}  // namespace berth::hetero
