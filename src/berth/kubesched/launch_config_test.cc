// The launch ConfigMap of a gang: its name (valid, stable, short enough), its
// data (ranks, host file, env per rank, TF_CONFIG, NCCL topology), its owners,
// and the size bound.
#include "berth/kubesched/launch_config.h"

#include <gtest/gtest.h>

#include <cctype>

#include "berth/cluster/loaders.h"

namespace berth::kube {
namespace {

framework::TaskPlacement At(int32_t task, int32_t node, uint64_t mask) {
  framework::TaskPlacement p;
  p.task = TaskKey{JobId(7), task};
  p.alloc.node = NodeId(node);
  p.alloc.gpu_mask = mask;
  p.alloc.milli_per_gpu = kMilliPerGpu;
  return p;
}

workload::LaunchSpec Spec(const cluster::Cluster& c, job::Launcher l) {
  job::JobSpec j;
  j.id = JobId(7);
  j.name = "ml/trainer";
  j.launcher = l;
  j.groups.push_back({.name = "worker", .count = 2, .gpus = 8});
  // Task 0 on node 3, task 1 on node 0: rank 0 is task 1.
  const std::vector<framework::TaskPlacement> placed = {At(0, 3, 0xff), At(1, 0, 0xff)};
  auto s = workload::ComputeLaunchSpec(c, j, placed, {});
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return *s;
}

TEST(LaunchConfig, NameIsAValidObjectName) {
  EXPECT_EQ(LaunchConfigMapName("ml/trainer"), "berth-launch-trainer");
  EXPECT_EQ(LaunchConfigMapName("ml/a.b-c"), "berth-launch-a.b-c");
  const std::string odd = LaunchConfigMapName("ml/My_Group");
  EXPECT_EQ(odd.rfind("berth-launch-my-group-", 0), 0u) << odd;
  EXPECT_EQ(odd.size(), std::string("berth-launch-my-group-").size() + 16);
  EXPECT_NE(LaunchConfigMapName("ml/My_Group"), LaunchConfigMapName("ml/my-group"));
  const std::string longest = LaunchConfigMapName("ml/" + std::string(300, 'x'));
  EXPECT_LE(longest.size(), 253u);
  EXPECT_EQ(LaunchConfigMapName("ml/" + std::string(300, 'x')), longest);  // stable
  const std::string dashes = LaunchConfigMapName("ml/__");
  EXPECT_NE(dashes.back(), '-');
}

TEST(LaunchConfig, HoldsTheGangsLaunchSpec) {
  auto c = cluster::ParseClusterSpec("4x8:H100/leaf=2");
  ASSERT_TRUE(c.ok());
  const workload::LaunchSpec spec = Spec(*c, job::Launcher::kTf);
  const nlohmann::json cm = LaunchConfigMap("ml", "ml/trainer", 7, spec, {{"w-0", "uid-0"}, {"w-1", "uid-1"}});
  EXPECT_EQ(cm["kind"], "ConfigMap");
  EXPECT_EQ(cm["metadata"]["name"], "berth-launch-trainer");
  EXPECT_EQ(cm["metadata"]["namespace"], "ml");
  EXPECT_EQ(cm["metadata"]["annotations"]["berth.dev/job"], "7");
  EXPECT_FALSE(cm["metadata"]["annotations"].contains("berth.dev/launch-omitted"));
  // Owned by every pod: collected once the last one is gone.
  ASSERT_EQ(cm["metadata"]["ownerReferences"].size(), 2u);
  EXPECT_EQ(cm["metadata"]["ownerReferences"][1]["uid"], "uid-1");
  EXPECT_EQ(cm["metadata"]["ownerReferences"][1]["kind"], "Pod");
  const auto& d = cm["data"];
  const std::string n0 = c->node(NodeId(0)).name, n3 = c->node(NodeId(3)).name;
  EXPECT_EQ(d["world-size"], "2");
  EXPECT_EQ(d["master"], n0 + ":29507");
  EXPECT_EQ(d["launcher"], "tf");
  EXPECT_EQ(d["hostfile"], n0 + " slots=1\n" + n3 + " slots=1\n");
  EXPECT_EQ(d["ring"], "0 1");
  EXPECT_EQ(d["pods"], "0 w-1 " + n0 + "\n1 w-0 " + n3 + "\n");  // rank 0 is the pod of task 1
  const std::string env1 = d["rank-1.env"];
  EXPECT_NE(env1.find("RANK=1\n"), std::string::npos) << env1;
  EXPECT_NE(env1.find("WORLD_SIZE=2\n"), std::string::npos);
  EXPECT_NE(env1.find("MASTER_ADDR=" + n0 + "\n"), std::string::npos);
  EXPECT_EQ(d["rank-0.tf-config"], spec.tasks[0].env.at("TF_CONFIG"));
  EXPECT_TRUE(d.contains("nccl-topo-" + n0 + ".xml"));
  EXPECT_TRUE(d.contains("nccl-topo-" + n3 + ".xml"));
  const auto whole = nlohmann::json::parse(d["launch.json"].get<std::string>());
  EXPECT_EQ(whole["world_size"], 2);
  // Every data key is a valid ConfigMap key.
  for (const auto& [k, v] : d.items())
    for (char ch : k) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.' || ch == '_') << k;
}

TEST(LaunchConfig, NoTfConfigForOtherLaunchers) {
  auto c = cluster::ParseClusterSpec("4x8:H100/leaf=2");
  ASSERT_TRUE(c.ok());
  const nlohmann::json cm = LaunchConfigMap("ml", "ml/trainer", 7, Spec(*c, job::Launcher::kTorch), {{"w-0", "a"}, {"w-1", "b"}});
  EXPECT_FALSE(cm["data"].contains("rank-0.tf-config"));
  EXPECT_EQ(cm["data"]["launcher"], "torch");
}

TEST(LaunchConfig, ABigGangLeavesOutWholeKindsUnderTheLimit) {
  auto c = cluster::ParseClusterSpec("4x8:H100/leaf=2");
  ASSERT_TRUE(c.ok());
  workload::LaunchSpec spec = Spec(*c, job::Launcher::kTorch);
  // Pad each rank's env so that the env files alone pass the limit.
  for (auto& t : spec.tasks) t.env["PAD"] = std::string(kMaxLaunchConfigBytes / 2 + 1, 'p');
  const nlohmann::json cm = LaunchConfigMap("ml", "ml/trainer", 7, spec, {{"w-0", "a"}, {"w-1", "b"}});
  EXPECT_EQ(cm["metadata"]["annotations"]["berth.dev/launch-omitted"], "env,launch.json");
  EXPECT_FALSE(cm["data"].contains("rank-0.env"));
  EXPECT_TRUE(cm["data"].contains("hostfile"));
  EXPECT_TRUE(cm["data"].contains("nccl-topo-" + c->node(NodeId(0)).name + ".xml"));
  EXPECT_LE(cm["data"].dump().size(), kMaxLaunchConfigBytes + 4096);
}

}  // namespace
}  // namespace berth::kube
