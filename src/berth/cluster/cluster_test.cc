// Tests of the cluster model: compact spec parsing (and its errors), the
// builder's grouping of nodes into contiguous domain ranges, levels, type sets.
#include "berth/cluster/cluster.h"

#include <gtest/gtest.h>

#include "berth/cluster/loaders.h"
#include "berth/testing/cluster_checks.h"

// Designated initializers below leave the other fields at their defaults on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace berth::cluster {
namespace {

void ExpectWellFormed(const Cluster& c) {
  Status s = testing::CheckClusterInvariants(c);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

Cluster MustParse(std::string_view spec) {
  auto c = ParseClusterSpec(spec);
  EXPECT_TRUE(c.ok()) << spec << ": " << c.status().ToString();
  return c.ok() ? std::move(c).value() : Cluster();
}

std::vector<std::pair<int, int>> Ranges(const Cluster& c, Level level) {
  std::vector<std::pair<int, int>> out;
  for (DomainId d : c.domains_at(level)) out.emplace_back(c.domain(d).begin.value(), c.domain(d).end.value());
  return out;
}

TEST(ClusterSpec, OneGroupHasDefaults) {
  Cluster c = MustParse("4x8:H100");
  EXPECT_EQ(c.num_nodes(), 4);
  EXPECT_EQ(c.total_gpus(), 32);
  EXPECT_EQ(c.max_gpus_per_node(), 8);
  ASSERT_EQ(c.gpu_types().size(), 1u);
  EXPECT_EQ(c.gpu_types()[0].name, "H100");
  EXPECT_EQ(c.gpu_types()[0].memory_mib, 80 * 1024);
  EXPECT_EQ(c.node(NodeId(0)).name, "node-0");
  EXPECT_EQ(c.node(NodeId(3)).name, "node-3");
  EXPECT_EQ(c.node(NodeId(0)).cpu_milli, 128'000);      // 16 cores per GPU
  EXPECT_EQ(c.node(NodeId(0)).memory_mib, 1024 * 1024);  // 128 GiB per GPU
  EXPECT_EQ(c.domains_at(Level::kLeaf).size(), 1u);
  EXPECT_EQ(c.domains_at(Level::kNvlink).size(), 4u);  // each node its own NVLink domain
  EXPECT_EQ(c.FindNode("node-2"), NodeId(2));
  EXPECT_FALSE(c.FindNode("node-4").has_value());
  ExpectWellFormed(c);
}

TEST(ClusterSpec, LeavesAndSpines) {
  Cluster c = MustParse("12x8:H100/leaf=4/spine=2");
  EXPECT_EQ(Ranges(c, Level::kLeaf), (std::vector<std::pair<int, int>>{{0, 4}, {4, 8}, {8, 12}}));
  EXPECT_EQ(Ranges(c, Level::kSpine), (std::vector<std::pair<int, int>>{{0, 8}, {8, 12}}));
  EXPECT_EQ(Ranges(c, Level::kCluster), (std::vector<std::pair<int, int>>{{0, 12}}));
  EXPECT_EQ(Ranges(c, Level::kRegion), (std::vector<std::pair<int, int>>{{0, 12}}));
  const Domain& leaf2 = c.domain(c.domains_at(Level::kLeaf)[2]);
  EXPECT_EQ(leaf2.gpus, 32);
  EXPECT_EQ(leaf2.parent, c.domains_at(Level::kSpine)[1]);
  EXPECT_EQ(leaf2.oversubscription, 1.0);
  ExpectWellFormed(c);
}

TEST(ClusterSpec, HeterogeneousGroupsGetTheirOwnLeaves) {
  Cluster c = MustParse("9x4:V100+9x4:P100+9x4:K80");
  EXPECT_EQ(c.num_nodes(), 27);
  EXPECT_EQ(c.total_gpus(), 108);
  ASSERT_EQ(c.gpu_types().size(), 3u);
  EXPECT_EQ(c.gpu_types()[1].name, "P100");
  EXPECT_EQ(Ranges(c, Level::kLeaf), (std::vector<std::pair<int, int>>{{0, 9}, {9, 18}, {18, 27}}));
  EXPECT_EQ(c.node(NodeId(9)).name, "node-9");  // numbering runs on across groups
  EXPECT_EQ(c.gpu_type(c.node(NodeId(20)).gpu_type).name, "K80");
  ExpectWellFormed(c);
}

TEST(ClusterSpec, NvlinkDomainsRegionsAndOptions) {
  Cluster c = MustParse("8x4:GB200/nvl=4/cpu=144/mem=960/region=us/cluster=pod+2x0:/region=eu");
  EXPECT_EQ(c.num_nodes(), 10);
  EXPECT_EQ(c.total_gpus(), 32);
  EXPECT_EQ(c.node(NodeId(0)).cpu_milli, 144'000);
  EXPECT_EQ(c.node(NodeId(0)).memory_mib, 960 * 1024);
  EXPECT_EQ(Ranges(c, Level::kNvlink).size(), 4u);  // 2 shared domains + 2 CPU nodes
  EXPECT_EQ(Ranges(c, Level::kNvlink)[0], std::make_pair(0, 4));
  EXPECT_EQ(Ranges(c, Level::kRegion), (std::vector<std::pair<int, int>>{{0, 8}, {8, 10}}));
  EXPECT_EQ(c.domain(c.domains_at(Level::kRegion)[1]).name, "eu");
  EXPECT_EQ(c.domain(c.domains_at(Level::kCluster)[0]).name, "pod");
  EXPECT_EQ(c.node(NodeId(9)).gpu_count, 0);
  EXPECT_FALSE(c.node(NodeId(9)).gpu_type.valid());
  ExpectWellFormed(c);
}

TEST(ClusterSpec, Errors) {
  struct Case {
    const char* spec;
    const char* message;
  };
  const Case cases[] = {
      {"", "empty cluster spec"},
      {"4x8", "expected NODESxGPUS:TYPE"},
      {"8:H100", "expected NODESxGPUS:TYPE"},
      {"ax8:H100", "bad node count"},
      {"0x8:H100", "bad node count"},
      {"4xb:H100", "bad GPU count"},
      {"4x8:", "missing GPU type"},
      {"4x65:H100", "too many GPUs per node"},
      {"4x8:H100/leaf", "option 'leaf' needs ="},
      {"4x8:H100/rack=2", "unknown option 'rack'"},
      {"4x8:H100/leaf=0", "option leaf must be a positive integer"},
      {"4x8:H100/leaf=-1", "option leaf must be a positive integer"},
      {"4x8:H100+2x8", "cluster spec group 2 '2x8'"},
  };
  for (const Case& k : cases) {
    auto c = ParseClusterSpec(k.spec);
    ASSERT_FALSE(c.ok()) << k.spec;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << k.spec;
    EXPECT_NE(c.status().message().find(k.message), std::string::npos)
        << "spec '" << k.spec << "' gave: " << c.status().message();
  }
}

TEST(ClusterSpec, LoadClusterFallsBackToASpec) {
  auto c = LoadCluster("2x8:A100");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->total_gpus(), 16);
}

TEST(Levels, NamesRoundTripAndSynonyms) {
  for (int l = 0; l < kNumLevels; ++l) {
    const Level level = static_cast<Level>(l);
    EXPECT_EQ(ParseLevel(LevelName(level)), level);
  }
  EXPECT_EQ(ParseLevel("zone"), Level::kCluster);
  EXPECT_EQ(ParseLevel("pod"), Level::kSpine);
  EXPECT_EQ(ParseLevel("block"), Level::kLeaf);
  EXPECT_EQ(ParseLevel("rail"), Level::kLeaf);
  EXPECT_EQ(ParseLevel("accelerator"), Level::kNvlink);
  EXPECT_FALSE(ParseLevel("rack").has_value());
}

TEST(Builder, GroupsNodesByDomainInFirstAppearanceOrder) {
  ClusterBuilder b;
  b.AddNode({.name = "a0", .gpu_count = 8, .gpu_type = "H100", .spine = "s0", .leaf = "A"});
  b.AddNode({.name = "b0", .gpu_count = 8, .gpu_type = "H100", .spine = "s1", .leaf = "B"});
  b.AddNode({.name = "a1", .gpu_count = 8, .gpu_type = "H100", .spine = "s0", .leaf = "A"});
  b.AddNode({.name = "c0", .gpu_count = 4, .gpu_type = "A100", .spine = "s0", .leaf = "C"});
  auto c = std::move(b).Build();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->node(NodeId(0)).name, "a0");
  EXPECT_EQ(c->node(NodeId(1)).name, "a1");
  EXPECT_EQ(c->node(NodeId(2)).name, "c0");  // same spine as A, so before B
  EXPECT_EQ(c->node(NodeId(3)).name, "b0");
  EXPECT_EQ(Ranges(*c, Level::kSpine), (std::vector<std::pair<int, int>>{{0, 3}, {3, 4}}));
  EXPECT_EQ(Ranges(*c, Level::kLeaf), (std::vector<std::pair<int, int>>{{0, 2}, {2, 3}, {3, 4}}));
  EXPECT_EQ(c->node(NodeId(2)).first_gpu, 16);
  EXPECT_EQ(c->NodeOfGpu(19), NodeId(2));
  EXPECT_EQ(c->NodeOfGpu(20), NodeId(3));
  ExpectWellFormed(*c);
}

TEST(Builder, SameLeafNameUnderTwoSpinesIsTwoLeaves) {
  ClusterBuilder b;
  b.AddNode({.name = "x", .gpu_count = 1, .gpu_type = "T4", .spine = "s0", .leaf = "leaf-0"});
  b.AddNode({.name = "y", .gpu_count = 1, .gpu_type = "T4", .spine = "s1", .leaf = "leaf-0"});
  auto c = std::move(b).Build();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->domains_at(Level::kLeaf).size(), 2u);
  ExpectWellFormed(*c);
}

TEST(Builder, DeclaredTypesComeFirstAndKeepTheirFacts) {
  ClusterBuilder b;
  b.DeclareGpuType({"V100", 16 * 1024, {{"bf16_tflops", "125"}}});
  b.DeclareGpuType({"K80", 0, {}});
  b.AddNode({.name = "n0", .gpu_count = 4, .gpu_type = "K80"});
  b.AddNode({.name = "n1", .gpu_count = 4, .gpu_type = "T4"});
  auto c = std::move(b).Build();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->gpu_types().size(), 3u);
  EXPECT_EQ(c->gpu_types()[0].name, "V100");
  EXPECT_EQ(c->gpu_types()[0].memory_mib, 16 * 1024);  // declared beats the known table (32)
  ASSERT_EQ(c->gpu_types()[0].specs.size(), 1u);
  EXPECT_EQ(c->gpu_types()[0].specs[0].second, "125");
  EXPECT_EQ(c->gpu_types()[1].memory_mib, 12 * 1024);  // from the known table
  EXPECT_EQ(c->gpu_types()[2].name, "T4");
  EXPECT_EQ(c->gpu_type(c->node(NodeId(0)).gpu_type).name, "K80");
}

TEST(Builder, LevelAndDomainLinks) {
  ClusterBuilder b;
  b.AddNode({.name = "a", .gpu_count = 8, .gpu_type = "H100", .region = "r", .cluster = "c", .spine = "s",
             .leaf = "l0"});
  b.AddNode({.name = "b", .gpu_count = 8, .gpu_type = "H100", .region = "r", .cluster = "c", .spine = "s",
             .leaf = "l1"});
  b.SetLevelBandwidth(Level::kLeaf, 400);
  b.SetLevelOversubscription(Level::kSpine, 3);
  b.SetDomainLinks(Level::kLeaf, "r/c/s/l1", {.bandwidth_gbps = 200, .oversubscription = 2});
  auto c = std::move(b).Build();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const auto& leaves = c->domains_at(Level::kLeaf);
  EXPECT_EQ(c->domain(leaves[0]).bandwidth_gbps, 400);
  EXPECT_EQ(c->domain(leaves[0]).oversubscription, 1);
  EXPECT_EQ(c->domain(leaves[1]).bandwidth_gbps, 200);
  EXPECT_EQ(c->domain(leaves[1]).oversubscription, 2);
  EXPECT_EQ(c->domain(c->domains_at(Level::kSpine)[0]).oversubscription, 3);
}

TEST(Builder, Errors) {
  auto build = [](auto&& setup) {
    ClusterBuilder b;
    setup(b);
    return std::move(b).Build().status();
  };
  EXPECT_NE(build([](ClusterBuilder&) {}).message().find("no nodes"), std::string::npos);
  EXPECT_NE(build([](ClusterBuilder& b) {
              b.AddNode({.name = "a", .gpu_count = 1, .gpu_type = "T4"});
              b.AddNode({.name = "a", .gpu_count = 1, .gpu_type = "T4"});
            }).message().find("duplicate node name 'a'"),
            std::string::npos);
  EXPECT_NE(build([](ClusterBuilder& b) { b.AddNode({.name = "a", .gpu_count = 2}); }).message().find("GPU type"),
            std::string::npos);
  EXPECT_NE(build([](ClusterBuilder& b) { b.AddNode({.name = "a", .gpu_count = 65, .gpu_type = "X"}); })
                .message()
                .find("more than 64 GPUs"),
            std::string::npos);
  EXPECT_NE(build([](ClusterBuilder& b) { b.AddNode({.name = "a", .cpu_milli = -1}); }).message().find("negative"),
            std::string::npos);
  EXPECT_NE(build([](ClusterBuilder& b) {
              b.AddNode({.name = "a"});
              b.SetDomainLinks(Level::kLeaf, "nowhere", {.bandwidth_gbps = 1});
            }).message().find("unknown leaf 'nowhere'"),
            std::string::npos);
  EXPECT_NE(build([](ClusterBuilder& b) {
              b.AddNode({.name = "a"});
              b.SetLevelOversubscription(Level::kSpine, 0);
            }).message().find("oversubscription must be positive"),
            std::string::npos);
  EXPECT_NE(build([](ClusterBuilder& b) {
              b.AddNode({.name = "a"});
              b.DeclareGpuType({"H100", 0, {}});
              b.DeclareGpuType({"H100", 0, {}});
            }).message().find("duplicate GPU type"),
            std::string::npos);
}

TEST(TypeSet, ParsesNamesAndFlagsUnknownOnes) {
  Cluster c = MustParse("1x8:V100M16+1x8:V100M32+1x2:T4");
  auto both = c.ParseTypeSet("V100M16 | V100M32");
  EXPECT_FALSE(both.unknown);
  EXPECT_TRUE(both.set.Contains(*c.FindGpuType("V100M16")));
  EXPECT_TRUE(both.set.Contains(*c.FindGpuType("V100M32")));
  EXPECT_FALSE(both.set.Contains(*c.FindGpuType("T4")));
  EXPECT_FALSE(both.set.Accepts(*c.FindGpuType("T4")));
  auto any = c.ParseTypeSet("");
  EXPECT_TRUE(any.set.empty());
  EXPECT_FALSE(any.unknown);
  EXPECT_TRUE(any.set.Accepts(*c.FindGpuType("T4")));
  auto partly = c.ParseTypeSet("A100|T4");
  EXPECT_FALSE(partly.unknown);
  EXPECT_TRUE(partly.set.Contains(*c.FindGpuType("T4")));
  EXPECT_TRUE(c.ParseTypeSet("A100").unknown);
}

TEST(Summary, CountsTypesAndDomains) {
  Cluster c = MustParse("2x8:H100/leaf=1+1x4:A100");
  EXPECT_EQ(c.Summary(), "3 nodes, 20 GPUs; A100 1/4; H100 2/16; 1 cluster(s), 2 spine(s), 3 leaf block(s)");
}

}  // namespace
}  // namespace berth::cluster
