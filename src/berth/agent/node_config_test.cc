// node.yaml and nvidia-smi parsing.
#include "berth/agent/node_config.h"

#include <gtest/gtest.h>

namespace berth::agent {
namespace {

TEST(NodeConfigTest, ParsesGpusAndLabels) {
  auto c = ParseNodeConfig(R"(
name: gpu-7
cpu_milli: 8000
memory_mib: 65536
gpus:
  - {index: 0, type: H100, memory_mib: 81920}
  - {index: 1, type: H100, memory_mib: 81920}
labels: {spine: s0, leaf: l1}
)", "node.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->name, "gpu-7");
  EXPECT_EQ(c->cpu_milli, 8000);
  ASSERT_EQ(c->gpus.size(), 2u);
  EXPECT_TRUE(c->gpus_given);
  EXPECT_EQ(c->gpus[1].index, 1);
  EXPECT_EQ(c->gpus[1].memory_mib, 81920);
  EXPECT_EQ(c->leaf, "l1");
  EXPECT_EQ(c->spine, "s0");
}

TEST(NodeConfigTest, ErrorsNameTheKey) {
  auto bad = ParseNodeConfig("gpus: [{index: x, type: H100}]", "node.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("node.yaml: gpus[0].index"), std::string::npos) << bad.status().message();
  auto mixed = ParseNodeConfig("gpus: [{index: 0, type: H100}, {index: 1, type: A100}]", "n.yaml");
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("one type"), std::string::npos);
  auto dup = ParseNodeConfig("gpus: [{index: 0, type: H100}, {index: 0, type: H100}]", "n.yaml");
  EXPECT_FALSE(dup.ok());
  auto unknown = ParseNodeConfig("colour: red", "n.yaml");
  EXPECT_FALSE(unknown.ok());
  auto level = ParseNodeConfig("labels: {rack: r1}", "n.yaml");
  EXPECT_FALSE(level.ok());
}

TEST(NodeConfigTest, NoGpusListedMeansNone) {
  auto c = ParseNodeConfig("name: cpu-1\ngpus: []\n", "n.yaml");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->gpus_given);
  EXPECT_TRUE(c->gpus.empty());
}

TEST(NodeConfigTest, ParsesNvidiaSmi) {
  auto g = ParseNvidiaSmiCsv(
      "index, name, memory.total [MiB]\n0, NVIDIA H100 80GB HBM3, 81559 MiB\n1, NVIDIA H100 80GB HBM3, 81559 MiB\n");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->size(), 2u);
  EXPECT_EQ((*g)[0].type, "H100");
  EXPECT_EQ((*g)[1].index, 1);
  EXPECT_EQ((*g)[1].memory_mib, 81559);
  EXPECT_EQ(GpuTypeFromProductName("NVIDIA A100-SXM4-40GB"), "A100");
  EXPECT_EQ(GpuTypeFromProductName("Tesla V100-SXM2-16GB"), "V100");
  EXPECT_FALSE(ParseNvidiaSmiCsv("0, H100\n").ok());
}

TEST(NodeConfigTest, CompletesFromTheMachine) {
  NodeConfig c;
  c.name = "n";
  ASSERT_TRUE(CompleteNodeConfig(c, "/nonexistent/nvidia-smi").ok());
  EXPECT_GT(c.cpu_milli, 0);
  EXPECT_GT(c.memory_mib, 0);
  EXPECT_TRUE(c.gpus.empty());  // no nvidia-smi: no GPUs
}

}  // namespace
}  // namespace berth::agent
