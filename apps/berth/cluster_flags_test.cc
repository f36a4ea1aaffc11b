// --cluster loading for the commands: Kubernetes NodeLists with
// --topology-label, the flag's parsing, and its errors.
#include "cluster_flags.h"

#include <gtest/gtest.h>

namespace berth::apps {
namespace {

const std::string kSrc = BERTH_SOURCE_DIR;
const std::string kNodes = kSrc + "/examples/clusters/k8s-nodes-16x8.json";
const std::string kCatalog = kSrc + "/data/accelerators.yaml";

TEST(ClusterFlags, TopologyLabelIsRepeatable) {
  CLI::App app;
  std::vector<std::string> labels;
  AddTopologyLabelOption(&app, &labels);
  const char* argv[] = {"berth", "--topology-label", "a.io/rack=leaf", "--topology-label", "b.io/hall=cluster"};
  app.parse(5, argv);
  EXPECT_EQ(labels, (std::vector<std::string>{"a.io/rack=leaf", "b.io/hall=cluster"}));
}

TEST(ClusterFlags, NodeListWithAndWithoutExtraLevels) {
  StatusOr<ClusterLoader> plain = MakeClusterLoader(kNodes, {}, kCatalog);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  StatusOr<cluster::Cluster> c = (*plain)(kNodes);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->Summary(), "16 nodes, 128 GPUs; H100 16/128; 1 cluster(s), 1 spine(s), 2 leaf block(s)");
  // Each host its own leaf: the extra mapping wins over Topograph's tier-0.
  StatusOr<ClusterLoader> by_host = MakeClusterLoader(kNodes, {"kubernetes.io/hostname=leaf"}, kCatalog);
  ASSERT_TRUE(by_host.ok());
  EXPECT_EQ((*by_host)(kNodes)->domains_at(cluster::Level::kLeaf).size(), 16u);
  // Other cluster forms still load.
  EXPECT_EQ((*plain)("2x8:H100")->num_nodes(), 2);
}

TEST(ClusterFlags, Errors) {
  StatusOr<ClusterLoader> bad = MakeClusterLoader(kNodes, {"a.io/rack=shelf"}, kCatalog);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--topology-label 'a.io/rack=shelf': unknown level 'shelf' (region, cluster, "
                                    "spine, leaf, nvlink)");
  StatusOr<ClusterLoader> not_nodes = MakeClusterLoader("2x8:H100", {"a.io/rack=leaf"}, kCatalog);
  ASSERT_FALSE(not_nodes.ok());
  EXPECT_NE(not_nodes.status().message().find("--topology-label applies to a Kubernetes NodeList"), std::string::npos);
  StatusOr<ClusterLoader> no_catalog = MakeClusterLoader(kNodes, {}, "/nonexistent/accelerators.yaml");
  ASSERT_TRUE(no_catalog.ok());
  StatusOr<cluster::Cluster> c = (*no_catalog)(kNodes);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("--catalog"), std::string::npos) << c.status().message();
  // The default catalog path, not found: the product labels as written.
  StatusOr<ClusterLoader> optional = MakeClusterLoader(kNodes, {}, "/nonexistent/accelerators.yaml", false);
  ASSERT_TRUE(optional.ok());
  c = (*optional)(kNodes);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->gpu_type(c->node(NodeId(0)).gpu_type).name, "NVIDIA-H100-80GB-HBM3");
}

}  // namespace
}  // namespace berth::apps
