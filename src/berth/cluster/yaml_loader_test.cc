// Tests of cluster YAML files: the shipped examples load with the expected
// shape, each form (tree, labelled flat list, compact groups) maps to the right
// domains, and errors name the file, line and key.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "berth/cluster/loaders.h"
#include "berth/common/csv.h"
#include "berth/testing/cluster_checks.h"
#include "berth/testing/paths.h"

namespace berth::cluster {
namespace {

std::string Example(const std::string& name) { return testing::SourceDir() + "/examples/clusters/" + name; }

Cluster MustLoad(const std::string& path) {
  auto c = LoadCluster(path);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  if (!c.ok()) return Cluster();
  Status s = testing::CheckClusterInvariants(*c);
  EXPECT_TRUE(s.ok()) << path << ": " << s.ToString();
  return std::move(c).value();
}

Cluster MustParse(const std::string& text) {
  auto c = ParseClusterYaml(text, "t.yaml");
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  if (!c.ok()) return Cluster();
  Status s = testing::CheckClusterInvariants(*c);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return std::move(c).value();
}

const Domain& DomainNamed(const Cluster& c, Level level, const std::string& name) {
  for (DomainId d : c.domains_at(level))
    if (c.domain(d).name == name) return c.domain(d);
  ADD_FAILURE() << "no " << LevelName(level) << " named " << name;
  return c.domain(c.domains_at(level)[0]);
}

int64_t GpusOfType(const Cluster& c, const std::string& type) {
  int64_t n = 0;
  for (const auto& node : c.nodes())
    if (node.gpu_count > 0 && c.gpu_type(node.gpu_type).name == type) n += node.gpu_count;
  return n;
}

TEST(ExampleClusters, Federation) {
  Cluster c = MustLoad(Example("federation-2-regions.yaml"));
  EXPECT_EQ(c.num_nodes(), 46);
  EXPECT_EQ(c.total_gpus(), 360);
  EXPECT_EQ(GpusOfType(c, "H100"), 176);
  EXPECT_EQ(GpusOfType(c, "A100"), 184);
  EXPECT_EQ(c.domains_at(Level::kRegion).size(), 2u);
  EXPECT_EQ(c.domains_at(Level::kCluster).size(), 3u);
  EXPECT_EQ(c.domains_at(Level::kSpine).size(), 4u);
  EXPECT_EQ(c.domains_at(Level::kLeaf).size(), 7u);
  EXPECT_EQ(DomainNamed(c, Level::kRegion, "us-east").gpus, 176);
  EXPECT_EQ(DomainNamed(c, Level::kRegion, "eu-west").bandwidth_gbps, 25);
  EXPECT_EQ(DomainNamed(c, Level::kCluster, "use-train").oversubscription, 4);
  EXPECT_EQ(DomainNamed(c, Level::kCluster, "use-dev").oversubscription, 8);
  EXPECT_EQ(DomainNamed(c, Level::kLeaf, "dev-leaf").bandwidth_gbps, 100);
  EXPECT_EQ(DomainNamed(c, Level::kLeaf, "euw-leaf-0").bandwidth_gbps, 400);
  EXPECT_EQ(DomainNamed(c, Level::kLeaf, "euw-leaf-1").bandwidth_gbps, 200);
  EXPECT_EQ(DomainNamed(c, Level::kSpine, "spine-1").oversubscription, 2);
  EXPECT_TRUE(c.FindNode("us-east-use-train-spine-1-leaf-0-n3").has_value());
  EXPECT_TRUE(c.FindNode("euw-a100-22").has_value());
  const auto h100 = c.FindGpuType("H100");
  ASSERT_TRUE(h100.has_value());
  EXPECT_EQ(c.gpu_type(*h100).specs.size(), 2u);
  const auto cpu = c.FindNode("dev-cpu-0");
  ASSERT_TRUE(cpu.has_value());
  EXPECT_EQ(c.node(*cpu).gpu_count, 0);
  EXPECT_EQ(c.node(*cpu).cpu_milli, 64'000);
}

TEST(ExampleClusters, Nvl72) {
  Cluster c = MustLoad(Example("nvl72.yaml"));
  EXPECT_EQ(c.num_nodes(), 144);
  EXPECT_EQ(c.total_gpus(), 576);
  ASSERT_EQ(c.domains_at(Level::kNvlink).size(), 8u);
  for (DomainId d : c.domains_at(Level::kNvlink)) {
    EXPECT_EQ(c.domain(d).gpus, 72);
    EXPECT_EQ(c.domain(d).end.value() - c.domain(d).begin.value(), 18);
    EXPECT_EQ(c.domain(d).bandwidth_gbps, 14400);
  }
  EXPECT_EQ(c.domains_at(Level::kLeaf).size(), 2u);
  EXPECT_EQ(c.gpu_types()[0].memory_mib, 186 * 1024);
  EXPECT_EQ(c.node(NodeId(0)).memory_mib, 960 * 1024);
}

TEST(ExampleClusters, HeliosPhillyMatchesTheVcTable) {
  Cluster c = MustLoad(Example("helios-philly.yaml"));
  EXPECT_EQ(c.num_nodes(), 352);
  EXPECT_EQ(c.total_gpus(), 2816);
  ASSERT_EQ(c.domains_at(Level::kLeaf).size(), 11u);
  // The same VC sizes as HeliosArtifact's philly_vc.csv.
  auto vc = CsvFile::Open(testing::DataDir() + "/helios/philly_vc.csv");
  ASSERT_TRUE(vc.ok()) << vc.status().ToString();
  size_t i = 0;
  while (vc->Next()) {
    std::string name;
    int64_t nodes = 0;
    ASSERT_TRUE(vc->GetString("vc", name).ok());
    ASSERT_TRUE(vc->GetInt("node num", nodes).ok());
    ASSERT_LT(i, c.domains_at(Level::kLeaf).size());
    const Domain& leaf = c.domain(c.domains_at(Level::kLeaf)[i++]);
    EXPECT_EQ(leaf.name, "vc-" + name);
    EXPECT_EQ(leaf.end.value() - leaf.begin.value(), nodes) << name;
  }
  EXPECT_EQ(i, 11u);
}

TEST(ExampleClusters, Gavel) {
  Cluster c = MustLoad(Example("gavel-36-36-36.yaml"));
  EXPECT_EQ(c.num_nodes(), 27);
  EXPECT_EQ(c.total_gpus(), 108);
  for (const char* t : {"V100", "P100", "K80"}) EXPECT_EQ(GpusOfType(c, t), 36) << t;
  EXPECT_EQ(c.gpu_type(*c.FindGpuType("V100")).memory_mib, 16 * 1024);
  EXPECT_EQ(c.domains_at(Level::kCluster).size(), 1u);
  EXPECT_EQ(c.domains_at(Level::kLeaf).size(), 3u);
}

TEST(ExampleClusters, KubernetesLabels) {
  Cluster c = MustLoad(Example("k8s-labels.yaml"));
  EXPECT_EQ(c.num_nodes(), 7);
  EXPECT_EQ(c.total_gpus(), 40);
  EXPECT_EQ(c.domains_at(Level::kRegion).size(), 1u);
  EXPECT_EQ(c.domains_at(Level::kCluster).size(), 2u);  // two zones
  EXPECT_EQ(DomainNamed(c, Level::kLeaf, "blk-1").end.value() - DomainNamed(c, Level::kLeaf, "blk-1").begin.value(), 2);
  const Domain& nvl = DomainNamed(c, Level::kNvlink, "nvl-0");
  EXPECT_EQ(nvl.gpus, 16);
  // gpu-a-2 is listed last but shares blk-1 with gpu-a-0, so it sits next to it.
  EXPECT_EQ(c.node(NodeId(0)).name, "gpu-a-0");
  EXPECT_EQ(c.node(NodeId(1)).name, "gpu-a-2");
  EXPECT_EQ(c.node(*c.FindNode("gpu-a-0")).gpu_count, 8);  // from nvidia.com/gpu.count
}

TEST(ClusterYaml, SkippedLevelsDefault) {
  Cluster c = MustParse(R"(
leaves:
  - name: l0
    nodes:
      - {name: a, gpus: 8, type: H100}
      - {name: b, gpus: 8, type: H100}
  - name: l1
    nodes:
      - {name: c, gpus: 8, type: H100}
)");
  EXPECT_EQ(c.domains_at(Level::kLeaf).size(), 2u);
  EXPECT_EQ(c.domains_at(Level::kSpine).size(), 1u);
  EXPECT_EQ(c.domains_at(Level::kRegion).size(), 1u);
  EXPECT_EQ(c.node(NodeId(0)).cpu_milli, 128'000);  // defaults as in compact specs
}

TEST(ClusterYaml, RepeatedDomainsAndNodeGroups) {
  Cluster c = MustParse(R"(
gpu_types: [{name: H100}]
levels: {nvlink: {bandwidth_gbps: 7200}, pod: {oversubscription: 2}}
spines:
  - count: 3
    prefix: sp
    leaves:
      - count: 2
        prefix: lf
        start: 10
        nodes: [{count: 4, gpus: 8, nvlink_domain: 2}]
)");
  EXPECT_EQ(c.num_nodes(), 24);
  EXPECT_EQ(c.domains_at(Level::kSpine).size(), 3u);
  EXPECT_EQ(c.domains_at(Level::kLeaf).size(), 6u);
  EXPECT_EQ(c.domains_at(Level::kNvlink).size(), 12u);
  EXPECT_EQ(c.domain(c.domains_at(Level::kSpine)[2]).name, "sp2");
  EXPECT_EQ(c.domain(c.domains_at(Level::kLeaf)[1]).name, "lf11");
  EXPECT_EQ(c.domain(c.domains_at(Level::kSpine)[0]).oversubscription, 2);
  EXPECT_EQ(c.domain(c.domains_at(Level::kNvlink)[0]).bandwidth_gbps, 7200);
  EXPECT_EQ(c.node(NodeId(0)).name, "sp0-lf10-n0");
  EXPECT_EQ(c.gpu_type(c.node(NodeId(0)).gpu_type).name, "H100");  // the one declared type
}

TEST(ClusterYaml, FormsMix) {
  Cluster c = MustParse(R"(
groups: "2x8:A100/region=r1"
nodes:
  - {name: x, gpus: 4, type: T4, labels: {topology.kubernetes.io/region: r2}}
)");
  EXPECT_EQ(c.num_nodes(), 3);
  EXPECT_EQ(c.domains_at(Level::kRegion).size(), 2u);
  EXPECT_EQ(c.node(NodeId(0)).name, "x");  // nodes: is read before groups:
}

struct ErrorCase {
  const char* yaml;
  const char* message;  // expected substring of the error
};

class ClusterYamlErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ClusterYamlErrors, NameFileLineAndKey) {
  auto c = ParseClusterYaml(GetParam().yaml, "t.yaml");
  ASSERT_FALSE(c.ok()) << GetParam().yaml;
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find(GetParam().message), std::string::npos)
      << "got: " << c.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ClusterYamlErrors,
    ::testing::Values(
        ErrorCase{"", "t.yaml:1: empty cluster file"},
        ErrorCase{"name: x\n", "t.yaml:1: no nodes"},
        ErrorCase{"nodes: [\n  {name: a\n", "t.yaml:"},
        ErrorCase{"nodes:\n  - name: a\n    gpu: 8\n", "t.yaml:3: nodes[0].gpu: unknown key"},
        ErrorCase{"rack: []\n", "t.yaml:1: rack: unknown key"},
        ErrorCase{"regions:\n  - name: r\n    clusters:\n      - name: c\n        nodes:\n"
                  "          - {name: n0, gpus: eight, type: H100}\n",
                  "t.yaml:6: regions[0].clusters[0].nodes[0].gpus: expected an integer, got 'eight'"},
        ErrorCase{"nodes:\n  - {name: a, gpus: 8}\n", "t.yaml:2: nodes[0].type: missing"},
        ErrorCase{"nodes:\n  - {name: a, gpus: 80, type: X}\n", "nodes[0].gpus: must be in 0..64"},
        ErrorCase{"nodes:\n  - {name: a, cpu: -1}\n", "t.yaml:2: nodes[0].cpu: must not be negative"},
        ErrorCase{"nodes:\n  - {name: a, memory_gib: lots}\n", "nodes[0].memory_gib: expected a number, got 'lots'"},
        ErrorCase{"gpu_types: [{name: H100}, {name: A100}]\nnodes:\n  - {name: a, gpus: 8, type: H10}\n",
                  "t.yaml:3: nodes[0].type: unknown GPU type 'H10' (declared: H100, A100)"},
        ErrorCase{"gpu_types:\n  - name: H100\n  - name: H100\nnodes: [{name: a}]\n",
                  "t.yaml:3: gpu_types[1].name: GPU type 'H100' declared twice"},
        ErrorCase{"gpu_types:\n  - {name: H100, memory_gib: 0}\nnodes: [{name: a}]\n",
                  "gpu_types[0].memory_gib: must be positive"},
        ErrorCase{"nodes:\n  - {name: a}\n  - {name: b}\n  - {name: a}\n",
                  "t.yaml:4: nodes[2]: duplicate node name 'a' (first at line 2)"},
        ErrorCase{"nodes:\n  - {count: 4, gpus: 1, type: T4}\n", "nodes[0].prefix: missing"},
        ErrorCase{"nodes:\n  - {count: 5, prefix: n, gpus: 4, type: GB200, nvlink_domain: 2}\n",
                  "t.yaml:2: nodes[0].nvlink_domain: must be positive and divide count 5"},
        ErrorCase{"nodes:\n  - {name: a, nvlink_domain: 2}\n", "nodes[0].nvlink_domain: needs count"},
        ErrorCase{"nodes:\n  - {name: a, count: 2}\n", "nodes[0].name: a group of nodes takes prefix, not name"},
        ErrorCase{"leaves:\n  - name: l0\n    nodes: [{name: a}]\n  - name: l0\n    nodes: [{name: b}]\n",
                  "t.yaml:4: leaves[1]: duplicate leaf 'default/default/default/l0'"},
        ErrorCase{"spines:\n  - name: s0\n", "t.yaml:2: spines[0]: spine has no members (expected one of: leaves, nodes)"},
        ErrorCase{"spines:\n  - name: s0\n    leaves: []\n", "spines[0].leaves: empty list"},
        ErrorCase{"leaves:\n  - name: l0\n    spines: [{name: s}]\n", "t.yaml:3: leaves[0].spines: unknown key"},
        ErrorCase{"clusters:\n  - {name: c, oversubscription: 0, nodes: [{name: a}]}\n",
                  "clusters[0].oversubscription: must be positive"},
        ErrorCase{"levels:\n  rack: {bandwidth_gbps: 1}\nnodes: [{name: a}]\n", "t.yaml:2: levels.rack: unknown level"},
        ErrorCase{"levels:\n  leaf: {speed: 1}\nnodes: [{name: a}]\n", "levels.leaf.speed: unknown key"},
        ErrorCase{"groups:\n  - 2x8:H100\n  - 2x8\n", "t.yaml:3: groups[1]: cluster spec group 2 '2x8'"},
        ErrorCase{"nodes:\n  - name: a\n    labels: {nvidia.com/gpu.count: many}\n",
                  "nodes[0].labels.nvidia.com/gpu.count: expected an integer"},
        ErrorCase{"leaves:\n  - name: l\n    nodes:\n      - {name: a, labels: {x: y}}\n",
                  "leaves[0].nodes[0].labels: unknown key"}));

TEST(ClusterYaml, MissingFileIsNotFound) {
  auto c = LoadCluster("/nonexistent/cluster.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("/nonexistent/cluster.yaml"), std::string::npos);
}

TEST(ClusterYaml, ErrorsFromAFileNameTheFile) {
  const std::string path = ::testing::TempDir() + "/bad_cluster.yaml";
  {
    std::ofstream out(path);
    out << "nodes:\n  - name: a\n    gpus: 2\n    type: T4\n    cpu: many\n";
  }
  auto c = LoadCluster(path);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(path + ":5: nodes[0].cpu: expected a number, got 'many'"), std::string::npos)
      << c.status().message();
}

}  // namespace
}  // namespace berth::cluster
