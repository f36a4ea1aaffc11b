// Catalog aliases on a cluster: product names find the cluster's types in
// both directions, case-insensitively; shared names stay ambiguous.
#include "berth/hetero/catalog_aliases.h"

#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"

namespace berth::hetero {
namespace {

Catalog SmallCatalog() {
  Catalog c;
  EXPECT_TRUE(c.Add({.name = "H100", .aliases = {"H100-SXM", "NVIDIA-H100-80GB-HBM3", "H100-PCIe"}}).ok());
  EXPECT_TRUE(c.Add({.name = "A100", .aliases = {"NVIDIA-A100-SXM4-80GB"}}).ok());
  return c;
}

TEST(CatalogAliases, ProductNamesFindTheClusterType) {
  auto cluster = cluster::LoadCluster("2x8:NVIDIA-H100-80GB-HBM3+1x8:A100");
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  EXPECT_FALSE(cluster->FindGpuType("H100"));  // no catalog yet
  AddCatalogAliases(SmallCatalog(), *cluster);
  const auto h100 = cluster->FindGpuType("NVIDIA-H100-80GB-HBM3");
  ASSERT_TRUE(h100);
  EXPECT_EQ(cluster->FindGpuType("H100"), h100);
  EXPECT_EQ(cluster->FindGpuType("h100-sxm"), h100);
  EXPECT_EQ(cluster->FindGpuType("NVIDIA-A100-SXM4-80GB"), cluster->FindGpuType("A100"));
  EXPECT_FALSE(cluster->FindGpuType("V100"));
  // Job specs ("H100|A100") resolve through the same look-up.
  const auto set = cluster->ParseTypeSet("H100|nvidia-a100-sxm4-80gb");
  EXPECT_FALSE(set.unknown);
  EXPECT_TRUE(set.set.Contains(*h100));
  EXPECT_TRUE(set.set.Contains(*cluster->FindGpuType("A100")));
}

TEST(CatalogAliases, SharedNamesStayAmbiguousAndExactNamesWin) {
  auto cluster = cluster::LoadCluster("1x8:H100+1x8:H100-PCIe");
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  AddCatalogAliases(SmallCatalog(), *cluster);
  EXPECT_NE(cluster->FindGpuType("H100"), cluster->FindGpuType("H100-PCIe"));  // each its own
  EXPECT_FALSE(cluster->FindGpuType("NVIDIA-H100-80GB-HBM3"));               // which one? neither
  EXPECT_FALSE(cluster->FindGpuType("H100-SXM"));
}

}  // namespace
}  // namespace berth::hetero
