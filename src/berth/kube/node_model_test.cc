// Kubernetes Nodes as the cluster model: resources, GPU products through the
// catalog, each topology label family, custom levels, cordons, NotReady,
// taints, malformed documents, the deterministic order, NodeList files.
#include "berth/kube/node_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>

#include "berth/cluster/node_labels.h"

namespace berth::kube {
namespace {

using cluster::Level;
using nlohmann::json;

// A Ready node with 8 GPUs, in the shape `kubectl get nodes -o json` prints.
json GpuNode(const std::string& name, json labels = json::object()) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata", {{"name", name}, {"uid", "uid-" + name}, {"resourceVersion", "42"}, {"labels", labels}}},
      {"spec", json::object()},
      {"status",
       {{"capacity", {{"cpu", "96"}, {"memory", "2113282040Ki"}, {"nvidia.com/gpu", "8"}, {"pods", "110"}}},
        {"allocatable", {{"cpu", "95500m"}, {"memory", "2111082040Ki"}, {"nvidia.com/gpu", "8"}}},
        {"conditions",
         json::array({{{"type", "MemoryPressure"}, {"status", "False"}}, {{"type", "Ready"}, {"status", "True"}}})}}}};
}

class NodeModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = hetero::LoadCatalog(std::string(BERTH_SOURCE_DIR) + "/data/accelerators.yaml");
    ASSERT_TRUE(c.ok()) << c.status().message();
    catalog_ = std::move(c).value();
    options_.catalog = &catalog_;
  }
  NodeInfo Parse(const json& node) {
    StatusOr<NodeInfo> n = ParseNode(node, options_);
    EXPECT_TRUE(n.ok()) << n.status().message();
    return n.ok() ? std::move(n).value() : NodeInfo{};
  }
  std::string Error(const json& node) {
    StatusOr<NodeInfo> n = ParseNode(node, options_);
    EXPECT_FALSE(n.ok());
    return n.ok() ? "" : n.status().message();
  }

  hetero::Catalog catalog_;
  NodeModelOptions options_;
};

TEST_F(NodeModelTest, ResourcesFromAllocatable) {
  NodeInfo n = Parse(GpuNode("gpu-0", {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}}));
  EXPECT_EQ(n.spec.name, "gpu-0");
  EXPECT_EQ(n.uid, "uid-gpu-0");
  EXPECT_EQ(n.resource_version, "42");
  EXPECT_EQ(n.spec.cpu_milli, 95500);
  EXPECT_EQ(n.spec.memory_mib, int64_t{2111082040} / 1024);  // KiB -> MiB, rounded down
  EXPECT_EQ(n.spec.gpu_count, 8);
  EXPECT_EQ(n.spec.gpu_type, "H100");
  EXPECT_EQ(n.spec.gpu_memory_mib, 80 * 1024);
  EXPECT_TRUE(n.ready);
  EXPECT_FALSE(n.unschedulable);
  EXPECT_TRUE(n.usable());
}

TEST_F(NodeModelTest, CapacityWhenAllocatableLacksTheResource) {
  json node = GpuNode("gpu-0");
  node["status"]["allocatable"].erase("nvidia.com/gpu");
  node["status"]["capacity"]["nvidia.com/gpu"] = "4";
  EXPECT_EQ(Parse(node).spec.gpu_count, 4);
  node["status"]["allocatable"]["nvidia.com/gpu"] = 2;  // a number is read as a quantity too
  EXPECT_EQ(Parse(node).spec.gpu_count, 2);
  node["status"].erase("capacity");
  node["status"].erase("allocatable");
  NodeInfo bare = Parse(node);
  EXPECT_EQ(bare.spec.gpu_count, 0);
  EXPECT_EQ(bare.spec.cpu_milli, 0);
  EXPECT_EQ(bare.spec.gpu_type, "");
}

TEST_F(NodeModelTest, OtherGpuResource) {
  json node = GpuNode("npu-0", {{"accelerator", "Ascend910B"}});
  node["status"]["allocatable"]["huawei.com/Ascend910"] = "8";
  options_.gpu_resource = "huawei.com/Ascend910";
  options_.product_label = "accelerator";
  NodeInfo n = Parse(node);
  EXPECT_EQ(n.spec.gpu_count, 8);
  EXPECT_EQ(n.spec.gpu_type, "Ascend-910B");
}

TEST_F(NodeModelTest, ProductsMapToTheCatalog) {
  const std::pair<const char*, const char*> cases[] = {
      {"NVIDIA-H100-80GB-HBM3", "H100"},
      {"NVIDIA-H100-PCIe", "H100"},
      {"NVIDIA-H800", "H800"},
      {"NVIDIA-H800-80GB-HBM3", "H800"},
      {"NVIDIA-H20", "H20"},
      {"NVIDIA-H200", "H200"},
      {"NVIDIA-A100-SXM4-80GB", "A100-80"},
      {"NVIDIA-A100-80GB-PCIe", "A100-80"},
      {"NVIDIA-A100-SXM4-40GB", "A100-40"},
      {"NVIDIA-A100-PCIE-40GB", "A100-40"},
      {"NVIDIA-A800-SXM4-80GB", "A800"},
      {"Tesla-V100-SXM2-16GB", "V100-16"},
      {"Tesla-V100-SXM2-32GB", "V100-32"},
      {"Tesla-V100-PCIE-32GB", "V100-32"},
      {"Tesla-P100-PCIE-16GB", "P100"},
      {"Tesla-T4", "T4"},
      {"NVIDIA-L40S", "L40S"},
      {"NVIDIA-L4", "L4"},
      {"NVIDIA-A10G", "A10"},
      {"nvidia-l40s", "L40S"},                         // case-insensitive
      {"NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "A100-40"},  // MIG (mixed strategy)
      {"NVIDIA-H100-80GB-HBM3-SHARED", "H100"},         // time-slicing, renamed
  };
  for (const auto& [product, name] : cases) {
    EXPECT_EQ(ResolveGpuProduct(catalog_, product), name) << product;
    EXPECT_EQ(Parse(GpuNode("n", {{"nvidia.com/gpu.product", product}})).spec.gpu_type, name) << product;
  }
  EXPECT_EQ(ResolveGpuProduct(catalog_, "NVIDIA-GeForce-RTX-4090"), "");
  EXPECT_EQ(Parse(GpuNode("n", {{"nvidia.com/gpu.product", "NVIDIA-GeForce-RTX-4090"}})).spec.gpu_type,
            "NVIDIA-GeForce-RTX-4090");
  // No product label: the type is named after the resource.
  EXPECT_EQ(Parse(GpuNode("n")).spec.gpu_type, "nvidia.com/gpu");
  // No catalog: the product text as it is.
  options_.catalog = nullptr;
  EXPECT_EQ(Parse(GpuNode("n", {{"nvidia.com/gpu.product", "Tesla-T4"}})).spec.gpu_type, "Tesla-T4");
}

TEST_F(NodeModelTest, GpuMemoryLabelWins) {
  NodeInfo n = Parse(GpuNode("n", {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}, {"nvidia.com/gpu.memory", "81559"}}));
  EXPECT_EQ(n.spec.gpu_memory_mib, 81559);
  json node = GpuNode("c");
  node["status"]["allocatable"].erase("nvidia.com/gpu");
  node["status"]["capacity"].erase("nvidia.com/gpu");
  node["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-H100-80GB-HBM3";
  EXPECT_EQ(Parse(node).spec.gpu_type, "");  // no GPUs, no type
}

TEST_F(NodeModelTest, TopographFabricAndAcceleratorLabels) {
  NodeInfo n = Parse(GpuNode("n", {{"fabric.topograph.run/tier-0", "sw-leaf-3"},
                                   {"fabric.topograph.run/tier-1", "sw-spine-1"},
                                   {"fabric.topograph.run/tier-2", "sw-core-0"},
                                   {"accelerator.topograph.run/domain", "nvl-a"},
                                   {"accelerator.topograph.run/sub-domain", "0"},
                                   {"topology.kubernetes.io/zone", "us-west-2a"},
                                   {"topology.kubernetes.io/region", "us-west-2"}}));
  EXPECT_EQ(n.spec.leaf, "sw-leaf-3");
  EXPECT_EQ(n.spec.spine, "sw-spine-1");
  EXPECT_EQ(n.spec.nvlink, "nvl-a/0");
  EXPECT_EQ(n.spec.cluster, "us-west-2a");
  EXPECT_EQ(n.spec.region, "us-west-2");
  EXPECT_EQ(Parse(GpuNode("n", {{"accelerator.topograph.run/domain", "nvl-b"}})).spec.nvlink, "nvl-b");
}

TEST_F(NodeModelTest, OlderTopographLabels) {
  NodeInfo n = Parse(GpuNode("n", {{"network.topology.nvidia.com/spine", "s1"},
                                   {"network.topology.nvidia.com/leaf", "l1"},
                                   {"network.topology.nvidia.com/block", "b1"},
                                   {"network.topology.nvidia.com/accelerator", "nvl1"},
                                   {"network.topology.nvidia.com/datacenter", "dc1"}}));
  EXPECT_EQ(n.spec.spine, "s1");
  EXPECT_EQ(n.spec.leaf, "l1");  // leaf before block
  EXPECT_EQ(n.spec.nvlink, "nvl1");
  EXPECT_EQ(n.spec.cluster, "dc1");
  EXPECT_EQ(Parse(GpuNode("n", {{"network.topology.nvidia.com/block", "b1"}})).spec.leaf, "b1");
  EXPECT_EQ(Parse(GpuNode("n", {{"nvidia.com/gpu.clique", "uuid.1"}})).spec.nvlink, "uuid.1");
  // The current keys come first; empty values count as absent.
  NodeInfo both = Parse(GpuNode("n", {{"fabric.topograph.run/tier-0", "new"},
                                      {"network.topology.nvidia.com/leaf", "old"},
                                      {"fabric.topograph.run/tier-1", ""},
                                      {"network.topology.nvidia.com/spine", "old-spine"}}));
  EXPECT_EQ(both.spec.leaf, "new");
  EXPECT_EQ(both.spec.spine, "old-spine");
  // No labels: the default domain at every level, the node its own NVLink domain.
  NodeInfo none = Parse(GpuNode("n"));
  EXPECT_EQ(none.spec.region + none.spec.cluster + none.spec.spine + none.spec.leaf + none.spec.nvlink, "");
}

TEST_F(NodeModelTest, CustomLevelsComeFirst) {
  options_.levels = {{"example.com/rack", Level::kLeaf}, {"example.com/hall", Level::kCluster}};
  NodeInfo n = Parse(GpuNode("n", {{"example.com/rack", "rack-7"},
                                   {"fabric.topograph.run/tier-0", "sw-3"},
                                   {"example.com/hall", "hall-b"},
                                   {"topology.kubernetes.io/zone", "z"}}));
  EXPECT_EQ(n.spec.leaf, "rack-7");
  EXPECT_EQ(n.spec.cluster, "hall-b");
  // Absent custom label: the built-in keys still apply.
  EXPECT_EQ(Parse(GpuNode("n", {{"fabric.topograph.run/tier-0", "sw-3"}})).spec.leaf, "sw-3");

  auto ok = cluster::ParseTopologyLabel("example.com/rack=leaf");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->first, "example.com/rack");
  EXPECT_EQ(ok->second, Level::kLeaf);
  EXPECT_EQ(cluster::ParseTopologyLabel("x/y=accelerator")->second, Level::kNvlink);
  for (const char* bad : {"example.com/rack", "=leaf", "x=", "x=rack"}) {
    auto r = cluster::ParseTopologyLabel(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().message();
  }
}

TEST_F(NodeModelTest, CordonedNodeIsUnschedulable) {
  json node = GpuNode("n");
  node["spec"]["unschedulable"] = true;
  node["spec"]["taints"] = json::array({{{"key", "node.kubernetes.io/unschedulable"}, {"effect", "NoSchedule"}}});
  NodeInfo n = Parse(node);
  EXPECT_TRUE(n.ready);
  EXPECT_TRUE(n.unschedulable);
  EXPECT_FALSE(n.usable());
}

TEST_F(NodeModelTest, NotReadyNodes) {
  for (const char* status : {"False", "Unknown"}) {
    json node = GpuNode("n");
    node["status"]["conditions"][1]["status"] = status;
    EXPECT_FALSE(Parse(node).ready) << status;
  }
  json no_conditions = GpuNode("n");
  no_conditions["status"].erase("conditions");
  EXPECT_FALSE(Parse(no_conditions).ready);
  for (const char* key : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}) {
    json node = GpuNode("n");
    node["spec"]["taints"] = json::array({{{"key", key}, {"effect", "NoExecute"}}});
    NodeInfo n = Parse(node);
    EXPECT_FALSE(n.ready) << key;
    EXPECT_FALSE(n.unschedulable) << key;
    EXPECT_FALSE(n.usable());
  }
}

TEST_F(NodeModelTest, Taints) {
  auto with_taint = [](json taint) {
    json node = GpuNode("n");
    node["spec"]["taints"] = json::array({taint});
    return node;
  };
  EXPECT_TRUE(Parse(with_taint({{"key", "maintenance"}, {"effect", "NoSchedule"}})).unschedulable);
  EXPECT_TRUE(Parse(with_taint({{"key", "maintenance"}, {"effect", "NoExecute"}})).unschedulable);
  EXPECT_FALSE(Parse(with_taint({{"key", "maintenance"}, {"effect", "PreferNoSchedule"}})).unschedulable);
  // The GPU resource's taint is tolerated by default (ExtendedResourceToleration).
  EXPECT_FALSE(Parse(with_taint({{"key", "nvidia.com/gpu"}, {"value", "present"}, {"effect", "NoSchedule"}})).unschedulable);
  options_.tolerated_taints = {"dedicated=ml:NoSchedule", "spot"};
  EXPECT_FALSE(Parse(with_taint({{"key", "dedicated"}, {"value", "ml"}, {"effect", "NoSchedule"}})).unschedulable);
  EXPECT_TRUE(Parse(with_taint({{"key", "dedicated"}, {"value", "web"}, {"effect", "NoSchedule"}})).unschedulable);
  EXPECT_TRUE(Parse(with_taint({{"key", "dedicated"}, {"value", "ml"}, {"effect", "NoExecute"}})).unschedulable);
  EXPECT_FALSE(Parse(with_taint({{"key", "spot"}, {"value", "true"}, {"effect", "NoExecute"}})).unschedulable);
  EXPECT_TRUE(Parse(with_taint({{"key", "nvidia.com/gpu"}, {"effect", "NoSchedule"}})).unschedulable);
}

// Which node changes lose the pods there (the kube scheduler then requeues
// the gangs with a pod there): not ready, or an untolerated NoExecute taint;
// a NoSchedule taint or a cordon only keeps new work away.
TEST_F(NodeModelTest, NodesThatLosePods) {
  json ready = GpuNode("n");
  EXPECT_FALSE(Parse(ready).loses_pods());
  for (const char* status : {"False", "Unknown"}) {
    json node = GpuNode("n");
    node["status"]["conditions"][1]["status"] = status;
    EXPECT_TRUE(Parse(node).loses_pods()) << status;
  }
  auto with_taint = [](json taint) {
    json node = GpuNode("n");
    node["spec"]["taints"] = json::array({taint});
    return node;
  };
  for (const char* key : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}) {
    const NodeInfo n = Parse(with_taint({{"key", key}, {"effect", "NoExecute"}}));
    EXPECT_TRUE(n.loses_pods()) << key;
    EXPECT_EQ(n.no_execute, "") << key;
  }
  const NodeInfo evicting = Parse(with_taint({{"key", "gpu-health"}, {"value", "xid-79"}, {"effect", "NoExecute"}}));
  EXPECT_TRUE(evicting.ready);
  EXPECT_FALSE(evicting.usable());
  EXPECT_TRUE(evicting.loses_pods());
  EXPECT_EQ(evicting.no_execute, "gpu-health");
  const NodeInfo no_schedule = Parse(with_taint({{"key", "gpu-health"}, {"effect", "NoSchedule"}}));
  EXPECT_FALSE(no_schedule.usable());
  EXPECT_FALSE(no_schedule.loses_pods());
  json cordoned = GpuNode("n");
  cordoned["spec"]["unschedulable"] = true;
  EXPECT_FALSE(Parse(cordoned).usable());
  EXPECT_FALSE(Parse(cordoned).loses_pods());
  // A tolerated NoExecute taint loses nothing.
  options_.tolerated_taints = {"spot"};
  EXPECT_FALSE(Parse(with_taint({{"key", "spot"}, {"effect", "NoExecute"}})).loses_pods());
}

TEST_F(NodeModelTest, MalformedDocumentsNameTheNodeAndField) {
  EXPECT_EQ(Error(json::array()), "node: expected an object (a v1.Node)");
  EXPECT_EQ(Error(json{{"kind", "Pod"}, {"metadata", {{"name", "p"}}}}), "node: kind \"Pod\", expected \"Node\"");
  EXPECT_EQ(Error(json{{"kind", "Node"}}), "node: metadata: missing");
  EXPECT_EQ(Error(json{{"metadata", {{"uid", "u"}}}}), "node: metadata.name: missing");
  EXPECT_EQ(Error(json{{"metadata", {{"name", 7}}}}), "node: metadata.name: expected a string");
  const std::pair<std::function<void(json&)>, std::string> cases[] = {
      {[](json& n) { n["metadata"]["labels"]["a"] = 1; }, "node n: metadata.labels.a: expected a string"},
      {[](json& n) { n["metadata"]["labels"] = "x"; }, "node n: metadata.labels: expected an object"},
      {[](json& n) { n["status"]["allocatable"]["cpu"] = "lots"; },
       "node n: status.allocatable.cpu: 'lots' is not a quantity (unknown suffix 'lots')"},
      {[](json& n) { n["status"]["allocatable"]["memory"] = json::array(); },
       "node n: status.allocatable.memory: expected a quantity"},
      {[](json& n) { n["status"]["capacity"]["cpu"] = "-4"; }, ""},  // allocatable wins; capacity not read
      {[](json& n) { n["status"]["allocatable"]["nvidia.com/gpu"] = "1500m"; },
       "node n: status.allocatable.nvidia.com/gpu: expected a whole number of GPUs"},
      {[](json& n) { n["status"]["allocatable"]["nvidia.com/gpu"] = "65"; },
       "node n: status.allocatable.nvidia.com/gpu: 65 GPUs, at most 64 per node"},
      {[](json& n) { n["status"]["allocatable"] = json::array(); },
       "node n: status.allocatable: expected an object"},
      {[](json& n) { n["status"]["conditions"] = json::object(); },
       "node n: status.conditions: expected an array"},
      {[](json& n) { n["status"]["conditions"][0]["status"] = true; },
       "node n: status.conditions[0].status: expected a string"},
      {[](json& n) { n["spec"]["unschedulable"] = "yes"; }, "node n: spec.unschedulable: expected true or false"},
      {[](json& n) { n["spec"]["taints"] = json::object(); }, "node n: spec.taints: expected an array"},
      {[](json& n) { n["spec"]["taints"] = json::array({{{"key", "k"}, {"effect", "Never"}}}); },
       "node n: spec.taints[0].effect: 'Never' (NoSchedule, PreferNoSchedule or NoExecute)"},
      {[](json& n) { n["spec"]["taints"] = json::array({{{"effect", "NoSchedule"}}}); },
       "node n: spec.taints[0].key: missing"},
      {[](json& n) { n["metadata"]["labels"]["nvidia.com/gpu.memory"] = "lots"; },
       "node n: metadata.labels.nvidia.com/gpu.memory: expected MiB, got 'lots'"},
  };
  for (const auto& [mutate, message] : cases) {
    json node = GpuNode("n");
    mutate(node);
    if (message.empty()) {
      Parse(node);
    } else {
      EXPECT_EQ(Error(node), message);
    }
  }
}

// Every field of a real node replaced by every JSON kind: an answer (a node or
// an error), never a throw or a crash.
TEST_F(NodeModelTest, AnyShapeGivesAnAnswer) {
  json base = GpuNode("n", {{"nvidia.com/gpu.product", "Tesla-T4"}, {"fabric.topograph.run/tier-0", "l"}});
  base["spec"]["taints"] = json::array({{{"key", "k"}, {"effect", "NoSchedule"}}});
  const json kinds[] = {nullptr, 1, -2.5, true, "x", "", json::array(), json::object(), json::array({1})};
  const json flat = base.flatten();
  int errors = 0;
  for (const auto& [pointer, value] : flat.items()) {
    for (const json& k : kinds) {
      json node = base;
      node[json::json_pointer(pointer)] = k;
      StatusOr<NodeInfo> n = ParseNode(node, options_);
      if (!n.ok()) {
        ++errors;
        EXPECT_FALSE(n.status().message().empty());
      }
    }
  }
  EXPECT_GT(errors, 0);
  EXPECT_FALSE(ParseNode(json("Node"), options_).ok());
  EXPECT_FALSE(ParseNode(json(nullptr), options_).ok());
}

// 2 spines x 2 leaves x 3 nodes, two of them sharing an NVLink domain.
std::vector<NodeInfo> Fleet(const NodeModelOptions& o) {
  std::vector<NodeInfo> nodes;
  for (int i = 0; i < 12; ++i) {
    json labels = {{"network.topology.nvidia.com/spine", "spine-" + std::to_string(i / 6)},
                   {"network.topology.nvidia.com/leaf", "leaf-" + std::to_string(i / 3)}};
    if (i % 3 != 0) labels["network.topology.nvidia.com/accelerator"] = "nvl-" + std::to_string(i / 3);
    nodes.push_back(ParseNode(GpuNode("node-" + std::to_string(100 - i), labels), o).value());
  }
  return nodes;
}

TEST_F(NodeModelTest, BuildOrderIsDeterministic) {
  std::vector<NodeInfo> nodes = Fleet(options_);
  auto names = [](const cluster::Cluster& c) {
    std::vector<std::string> out;
    for (const auto& n : c.nodes()) out.push_back(n.name);
    return out;
  };
  StatusOr<cluster::Cluster> first = BuildCluster(nodes, options_);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->num_nodes(), 12);
  EXPECT_EQ(first->total_gpus(), 96);
  EXPECT_EQ(first->domains_at(Level::kSpine).size(), 2u);
  EXPECT_EQ(first->domains_at(Level::kLeaf).size(), 4u);
  EXPECT_EQ(first->domains_at(Level::kNvlink).size(), 8u);  // 4 single nodes + 4 shared pairs
  // Sorted by (spine, leaf, nvlink, name): in leaf-0, node-100 (its own NVLink
  // domain, "" sorts first), then node-98 and node-99 of nvl-0.
  const std::vector<std::string> expected_head = {"node-100", "node-98", "node-99", "node-97"};
  const std::vector<std::string> order = names(*first);
  EXPECT_EQ(std::vector<std::string>(order.begin(), order.begin() + 4), expected_head);
  std::mt19937 rng(7);
  for (int round = 0; round < 5; ++round) {
    std::shuffle(nodes.begin(), nodes.end(), rng);
    StatusOr<cluster::Cluster> again = BuildCluster(nodes, options_);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(names(*again), names(*first));
  }
}

TEST_F(NodeModelTest, BuildErrors) {
  std::vector<NodeInfo> nodes = Fleet(options_);
  nodes.push_back(nodes[0]);
  StatusOr<cluster::Cluster> c = BuildCluster(nodes, options_);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("duplicate node name 'node-100'"), std::string::npos) << c.status().message();
  EXPECT_FALSE(BuildCluster({}, options_).ok());
}

class NodeListTest : public NodeModelTest {
 protected:
  std::string Write(const std::string& text) {
    const std::string path = ::testing::TempDir() + "/nodes-" +
                             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json";
    std::ofstream(path) << text;
    return path;
  }
};

TEST_F(NodeListTest, ListAndArrayForms) {
  json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array({GpuNode("b"), GpuNode("a")})}};
  StatusOr<cluster::Cluster> c = LoadNodeList(Write(list.dump(2)), options_);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->num_nodes(), 2);
  EXPECT_EQ(c->node(NodeId(0)).name, "a");
  list["kind"] = "NodeList";
  EXPECT_TRUE(LoadNodeList(Write(list.dump()), options_).ok());
  EXPECT_TRUE(LoadNodeList(Write(list["items"].dump()), options_).ok());
}

TEST_F(NodeListTest, ErrorsNameTheFileAndItem) {
  json bad = GpuNode("b");
  bad["status"]["allocatable"]["cpu"] = "x";
  json list = {{"kind", "List"}, {"items", json::array({GpuNode("a"), bad})}};
  std::string path = Write(list.dump());
  StatusOr<cluster::Cluster> c = LoadNodeList(path, options_);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            path + ": items[1]: node b: status.allocatable.cpu: 'x' is not a quantity (unknown suffix 'x')");

  path = Write(json::array({GpuNode("a"), 3}).dump());
  EXPECT_EQ(LoadNodeList(path, options_).status().message(), path + ": [1]: node: expected an object (a v1.Node)");
  path = Write(json{{"kind", "PodList"}, {"items", json::array()}}.dump());
  EXPECT_NE(LoadNodeList(path, options_).status().message().find(path + ": kind \"PodList\", expected \"NodeList\""),
            std::string::npos);
  path = Write(json{{"kind", "List"}}.dump());
  EXPECT_EQ(LoadNodeList(path, options_).status().message(), path + ": items: missing (expected a v1.NodeList)");
  path = Write("{\"items\": [");
  EXPECT_NE(LoadNodeList(path, options_).status().message().find(path + ": not JSON"), std::string::npos);
  path = Write(json{{"items", json::array({GpuNode("a"), GpuNode("a")})}}.dump());
  EXPECT_EQ(LoadNodeList(path, options_).status().message(), path + ": duplicate node name 'a'");
  path = Write("[]");
  EXPECT_EQ(LoadNodeList(path, options_).status().message(), path + ": cluster has no nodes");
  EXPECT_FALSE(LoadNodeList("/nonexistent/nodes.json", options_).ok());
}

TEST_F(NodeListTest, ShippedExample) {
  StatusOr<cluster::Cluster> c =
      LoadNodeList(std::string(BERTH_SOURCE_DIR) + "/examples/clusters/k8s-nodes-16x8.json", options_);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->Summary(), "16 nodes, 128 GPUs; H100 16/128; 1 cluster(s), 1 spine(s), 2 leaf block(s)");
  EXPECT_EQ(c->gpu_type(c->node(NodeId(0)).gpu_type).memory_mib, 81559);
  const cluster::Domain& leaf0 = c->domain(c->domains_at(Level::kLeaf)[0]);
  EXPECT_EQ(leaf0.name, "example-leaf-0");
  EXPECT_EQ(leaf0.gpus, 64);
  EXPECT_EQ(c->domain(c->domains_at(Level::kSpine)[0]).name, "example-spine-0");
  EXPECT_EQ(c->domain(c->domains_at(Level::kCluster)[0]).name, "example-region-1a");
  EXPECT_EQ(c->node(NodeId(0)).name, "example-gpu-00");
  EXPECT_EQ(c->node(NodeId(15)).name, "example-gpu-15");
}

}  // namespace
}  // namespace berth::kube
