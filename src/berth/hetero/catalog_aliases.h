// The accelerator catalog's names for a cluster's GPU types: after
// AddCatalogAliases, a job, quota or node that says "NVIDIA-H100-80GB-HBM3",
// "H100-SXM" or "h100" finds the cluster's type, whichever of them the
// cluster file spelled.
//
//   cluster::Cluster c = ...;            // nodes of type "NVIDIA-H100-80GB-HBM3"
//   AddCatalogAliases(catalog, c);
//   c.FindGpuType("H100");               // -> that type
#pragma once

#include "berth/cluster/cluster.h"
#include "berth/hetero/catalog.h"

namespace berth::hetero {

// For every GPU type of `cluster` the catalog knows (by name or alias), adds
// the catalog entry's name and aliases as aliases of that type. A name that
// two cluster types share through the catalog (H100 and H100-PCIe are one
// entry) stays ambiguous and finds neither; exact type names always win.
void AddCatalogAliases(const Catalog& catalog, cluster::Cluster& cluster);

}  // namespace berth::hetero
