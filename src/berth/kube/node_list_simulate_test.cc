// `berth simulate` on a Kubernetes NodeList: the shipped example cluster and
// trace replayed through RunSimulation with the node-model loader, as the
// command line wires it.
#include <gtest/gtest.h>

#include "berth/kube/cluster_source.h"
#include "berth/sim/simulate.h"

namespace berth::kube {
namespace {

TEST(NodeListSimulate, ExampleClusterAndTrace) {
  const std::string src = BERTH_SOURCE_DIR;
  auto catalog = hetero::LoadCatalog(src + "/data/accelerators.yaml");
  ASSERT_TRUE(catalog.ok()) << catalog.status().message();
  NodeModelOptions options;
  options.catalog = &*catalog;
  sim::SimulateOptions o;
  o.cluster = src + "/examples/clusters/k8s-nodes-16x8.json";
  o.load_cluster = [&options](const std::string& path) { return LoadClusterSource(path, options); };
  o.trace = src + "/examples/traces/k8s-gangs.jsonl";
  o.mode = "replay";
  o.policies = {"topology", "fifo"};
  StatusOr<sim::SimulateOutput> out = sim::RunSimulation(o);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->cluster_summary, "16 nodes, 128 GPUs; H100 16/128; 1 cluster(s), 1 spine(s), 2 leaf block(s)");
  ASSERT_EQ(out->results.size(), 2u);
  for (const auto& r : out->results) {
    EXPECT_EQ(r.jobs_total, 48) << r.policy;
    EXPECT_EQ(r.jobs_unfinished, 0) << r.policy;
    EXPECT_EQ(r.jobs_never_fit, 0) << r.policy;
  }
  // The same run twice gives the same figures (node ids come from the sorted node set).
  StatusOr<sim::SimulateOutput> again = sim::RunSimulation(o);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->results[0].decision_log_hash, out->results[0].decision_log_hash);
}

}  // namespace
}  // namespace berth::kube
