// Launch specs: rank order over the topology, the torchrun variables, TF_CONFIG,
// the MPI host file, NCCL hints, addresses and ports.
#include "berth/workload/launch.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "berth/cluster/loaders.h"

namespace berth::workload {
namespace {

framework::TaskPlacement At(int32_t task, int32_t node, uint64_t mask) {
  framework::TaskPlacement p;
  p.task = TaskKey{JobId(7), task};
  p.alloc.node = NodeId(node);
  p.alloc.gpu_mask = mask;
  p.alloc.milli_per_gpu = kMilliPerGpu;
  return p;
}

job::JobSpec Gang(int32_t count, int32_t gpus, job::Launcher l) {
  job::JobSpec j;
  j.id = JobId(7);
  j.name = "g";
  j.launcher = l;
  j.groups.push_back({.name = "worker", .count = count, .gpus = gpus});
  return j;
}

TEST(LaunchSpec, RanksFollowTheTopologyNotTheTaskIndex) {
  auto c = cluster::ParseClusterSpec("4x8:H100/leaf=2");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  job::JobSpec j = Gang(4, 4, job::Launcher::kTorch);
  // Tasks 0 and 1 on node 3, tasks 2 and 3 on node 0 (upper then lower GPUs).
  std::vector<framework::TaskPlacement> p = {At(0, 3, 0xf0), At(1, 3, 0x0f), At(2, 0, 0xf0), At(3, 0, 0x0f)};
  auto s = ComputeLaunchSpec(*c, j, p, {});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->world_size, 4);
  std::vector<int32_t> tasks;
  for (const auto& t : s->tasks) tasks.push_back(t.task);
  EXPECT_EQ(tasks, (std::vector<int32_t>{3, 2, 1, 0}));
  const auto& r0 = s->tasks[0];
  EXPECT_EQ(r0.node, c->node(NodeId(0)).name);
  EXPECT_EQ(r0.env.at("RANK"), "0");
  EXPECT_EQ(r0.env.at("WORLD_SIZE"), "4");
  EXPECT_EQ(r0.env.at("LOCAL_RANK"), "0");
  EXPECT_EQ(r0.env.at("LOCAL_WORLD_SIZE"), "2");
  EXPECT_EQ(r0.env.at("NODE_RANK"), "0");
  EXPECT_EQ(r0.env.at("CUDA_VISIBLE_DEVICES"), "0,1,2,3");
  EXPECT_EQ(s->tasks[3].env.at("NODE_RANK"), "1");
  EXPECT_EQ(s->tasks[3].env.at("LOCAL_RANK"), "1");
  EXPECT_EQ(s->tasks[3].env.at("CUDA_VISIBLE_DEVICES"), "4,5,6,7");
  EXPECT_EQ(s->master_addr, c->node(NodeId(0)).name);
  for (const auto& t : s->tasks) EXPECT_EQ(t.env.at("MASTER_ADDR"), s->master_addr);
  EXPECT_EQ(s->master_port, 29500 + 7);
  EXPECT_EQ(s->mpi_hostfile, c->node(NodeId(0)).name + " slots=2\n" + c->node(NodeId(3)).name + " slots=2\n");
  EXPECT_EQ(s->nccl_ring, (std::vector<int32_t>{0, 1, 2, 3}));
  ASSERT_EQ(s->nodes.size(), 2u);
  EXPECT_EQ(s->nodes[1].ranks, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(r0.env.count("TF_CONFIG"), 0u);
  // Deterministic: the same input gives the same spec.
  std::reverse(p.begin(), p.end());
  auto again = ComputeLaunchSpec(*c, j, p, {});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->tasks[2].env, s->tasks[2].env);
}

TEST(LaunchSpec, APartOfAGangAcrossRegionsTakesTheGangsRanks) {
  auto c = cluster::ParseClusterSpec("4x8:H100/leaf=2");
  ASSERT_TRUE(c.ok());
  // Part 1 of 2: 2 tasks, ranks 6 and 7 of a gang of 8, its rendezvous in the job's env.
  job::JobSpec j = Gang(2, 8, job::Launcher::kTorch);
  j.span_part = job::JobSpec::SpanPart{1, 2, 8, 6};
  j.env = {{"MASTER_ADDR", "rdzv.example"}, {"MASTER_PORT", "29400"}, {"RANK", "user"}};
  auto s = ComputeLaunchSpec(*c, j, std::vector<framework::TaskPlacement>{At(0, 1, 0xff), At(1, 2, 0xff)}, {});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->world_size, 8);
  EXPECT_EQ(s->master_addr, "rdzv.example");
  EXPECT_EQ(s->master_port, 29400);
  ASSERT_EQ(s->tasks.size(), 2u);
  for (int k = 0; k < 2; ++k) {
    const auto& e = s->tasks[k].env;
    EXPECT_EQ(s->tasks[k].rank, 6 + k);
    EXPECT_EQ(e.at("RANK"), std::to_string(6 + k));
    EXPECT_EQ(e.at("WORLD_SIZE"), "8");
    EXPECT_EQ(e.at("LOCAL_RANK"), "0");
    EXPECT_EQ(e.at("MASTER_ADDR"), "rdzv.example");
    EXPECT_EQ(e.at("MASTER_PORT"), "29400");
    EXPECT_EQ(e.at("BERTH_SPAN_PART"), "1");
    EXPECT_EQ(e.at("BERTH_SPAN_PARTS"), "2");
    EXPECT_EQ(e.at("BERTH_SPAN_RANK_OFFSET"), "6");
    EXPECT_EQ(e.at("BERTH_SPAN_PART_TASKS"), "2");
  }
  EXPECT_EQ(s->nodes[1].ranks, (std::vector<int32_t>{7}));
  EXPECT_EQ(s->nccl_ring, (std::vector<int32_t>{6, 7}));
  // Without a rendezvous in its env, a part's MASTER_ADDR is its own first node.
  j.env.clear();
  auto own = ComputeLaunchSpec(*c, j, std::vector<framework::TaskPlacement>{At(0, 1, 0xff), At(1, 2, 0xff)}, {});
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->master_addr, c->node(NodeId(1)).name);
  EXPECT_EQ(own->tasks[0].env.at("RANK"), "6");
}

TEST(LaunchSpec, AddressesPortsAndTheJobsEnv) {
  auto c = cluster::ParseClusterSpec("2x4:H100");
  ASSERT_TRUE(c.ok());
  job::JobSpec j = Gang(2, 4, job::Launcher::kMpi);
  j.id = JobId(1234);
  j.env = {{"RANK", "user"}, {"NCCL_DEBUG", "INFO"}};
  LaunchOptions o;
  o.port_min = 40000;
  o.port_max = 40009;
  const std::string n1 = c->node(NodeId(1)).name;
  o.node_address = [&](const std::string& n) -> std::optional<std::string> {
    if (n == n1) return "10.0.0.2";
    return std::nullopt;
  };
  j.id = JobId(1234);
  std::vector<framework::TaskPlacement> p = {At(0, 1, 0xf), At(1, 0, 0xf)};
  auto s = ComputeLaunchSpec(*c, j, p, o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->master_port, 40004);  // 1234 mod 10
  EXPECT_EQ(s->master_addr, c->node(NodeId(0)).name);
  EXPECT_EQ(s->tasks[1].address, "10.0.0.2");
  EXPECT_EQ(s->mpi_hostfile, c->node(NodeId(0)).name + " slots=1\n10.0.0.2 slots=1\n");
  EXPECT_EQ(s->tasks[0].env.at("NCCL_DEBUG"), "INFO");
  EXPECT_EQ(s->tasks[0].env.at("RANK"), "0");  // Berth's variables win
  o.port_min = 70000;
  EXPECT_NE(ComputeLaunchSpec(*c, j, p, o).status().message().find("--launch-ports"), std::string::npos);
}

TEST(LaunchSpec, TfConfigListsWorkersInRankOrder) {
  auto c = cluster::ParseClusterSpec("2x8:H100");
  ASSERT_TRUE(c.ok());
  job::JobSpec j;
  j.id = JobId(3);
  j.name = "tf";
  j.launcher = job::Launcher::kTf;
  j.groups.push_back({.name = "chief", .count = 1, .gpus = 1});
  j.groups.push_back({.name = "w", .count = 2, .gpus = 1});
  std::vector<framework::TaskPlacement> p = {At(0, 0, 0x1), At(1, 1, 0x1), At(2, 0, 0x2)};
  auto s = ComputeLaunchSpec(*c, j, p, {});
  ASSERT_TRUE(s.ok());
  auto tf = nlohmann::json::parse(s->tasks[1].env.at("TF_CONFIG"));
  const std::string a = c->node(NodeId(0)).name, b = c->node(NodeId(1)).name;
  EXPECT_EQ(tf["cluster"]["chief"], nlohmann::json::array({a + ":29503"}));
  EXPECT_EQ(tf["cluster"]["worker"], nlohmann::json::array({a + ":29504", b + ":29503"}));
  EXPECT_EQ(tf["task"]["type"], "worker");
  EXPECT_EQ(tf["task"]["index"], 0);
  EXPECT_EQ(s->tasks[1].task, 2);
}

TEST(LaunchSpec, NcclTopologyDescribesTheNode) {
  auto c = cluster::ParseClusterSpec("2x8:H100/leaf=1");
  ASSERT_TRUE(c.ok());
  const std::string xml = NcclTopologyXml(*c, NodeId(0), std::vector<int32_t>{0, 1});
  EXPECT_NE(xml.find("<system version=\"1\">"), std::string::npos);
  EXPECT_NE(xml.find("<gpu dev=\"7\" berth_unused=\"1\">"), std::string::npos);
  EXPECT_NE(xml.find("<gpu dev=\"1\">"), std::string::npos);
  EXPECT_NE(xml.find("<nvlink"), std::string::npos);
  EXPECT_NE(xml.find("<net name=\"berth-rail0\""), std::string::npos);
}

TEST(LaunchSpec, BadPlacementsAreErrors) {
  auto c = cluster::ParseClusterSpec("2x8:H100");
  ASSERT_TRUE(c.ok());
  job::JobSpec j = Gang(2, 1, job::Launcher::kNone);
  EXPECT_EQ(ComputeLaunchSpec(*c, j, {}, {}).status().code(), StatusCode::kFailedPrecondition);
  std::vector<framework::TaskPlacement> twice = {At(0, 0, 1), At(0, 1, 1)};
  EXPECT_NE(ComputeLaunchSpec(*c, j, twice, {}).status().message().find("twice"), std::string::npos);
  std::vector<framework::TaskPlacement> far = {At(5, 0, 1)};
  EXPECT_FALSE(ComputeLaunchSpec(*c, j, far, {}).ok());
  std::vector<framework::TaskPlacement> nowhere = {At(0, 9, 1)};
  EXPECT_FALSE(ComputeLaunchSpec(*c, j, nowhere, {}).ok());
}

// Isolation limits: a share gets its compute share and GPU memory limit, a
// whole-GPU task with GPU memory one limit per GPU it sees, a task without
// either nothing.
TEST(LaunchSpec, IsolationLimitsOfSharesAndGpuMemory) {
  auto c = cluster::ParseClusterSpec("2x4:H100");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  job::JobSpec j = Gang(3, 1, job::Launcher::kNone);
  std::vector<framework::TaskPlacement> p = {At(0, 0, 0x1), At(1, 0, 0x6), At(2, 1, 0x1)};
  p[0].alloc.milli_per_gpu = 333;
  p[0].alloc.gpu_memory_mib = 10240;
  p[1].alloc.gpu_memory_mib = 40960;  // two whole GPUs, 40 GiB each
  auto s = ComputeLaunchSpec(*c, j, p, {});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const auto& share = s->tasks[0].env;
  EXPECT_EQ(share.at("BERTH_GPU_MEMORY_LIMIT_MIB"), "10240");
  EXPECT_EQ(share.at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=10240M");
  EXPECT_EQ(share.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "34");
  EXPECT_EQ(share.at("BERTH_GPU_COMPUTE_PERCENT"), "34");
  const auto& whole = s->tasks[1].env;
  EXPECT_EQ(whole.at("CUDA_VISIBLE_DEVICES"), "1,2");
  EXPECT_EQ(whole.at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=40960M,1=40960M");
  EXPECT_EQ(whole.count("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), 0u);
  const auto& plain = s->tasks[2].env;
  EXPECT_EQ(plain.count("BERTH_GPU_MEMORY_LIMIT_MIB"), 0u);
  EXPECT_EQ(plain.count("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), 0u);
  EXPECT_TRUE(IsolationOf(p[2].alloc).empty());
  EXPECT_EQ(IsolationOf(p[0].alloc).active_thread_percent, 34);
}

}  // namespace
}  // namespace berth::workload

namespace berth::workload {
namespace {

// After an in-place repair moves a task, the run's kept rank order gives it
// the rank it had; the rule alone would renumber.
TEST(LaunchSpec, AKeptRankOrderSurvivesAMovedTask) {
  auto c = cluster::ParseClusterSpec("4x8:H100/leaf=2");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  job::JobSpec j;
  j.id = JobId(7);
  j.name = "g";
  j.launcher = job::Launcher::kTorch;
  j.groups.push_back({.name = "worker", .count = 3, .gpus = 8});
  auto at = [](int32_t task, int32_t node) {
    framework::TaskPlacement p;
    p.task = TaskKey{JobId(7), task};
    p.alloc.node = NodeId(node);
    p.alloc.gpu_mask = 0xff;
    p.alloc.milli_per_gpu = kMilliPerGpu;
    return p;
  };
  std::vector<framework::TaskPlacement> first = {at(0, 0), at(1, 1), at(2, 2)};
  const std::vector<int32_t> order = RankOrder(first);
  EXPECT_EQ(order, (std::vector<int32_t>{0, 1, 2}));
  // Task 0 (rank 0) moves to node 3, past the others in topology order.
  std::vector<framework::TaskPlacement> moved = {at(0, 3), at(1, 1), at(2, 2)};
  auto rule = ComputeLaunchSpec(*c, j, moved, {});
  ASSERT_TRUE(rule.ok());
  EXPECT_EQ(rule->tasks[0].task, 1);  // renumbered by the rule
  LaunchOptions kept;
  kept.rank_order = order;
  auto s = ComputeLaunchSpec(*c, j, moved, kept);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->tasks.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(s->tasks[r].rank, r);
    EXPECT_EQ(s->tasks[r].task, r);
    EXPECT_EQ(s->tasks[r].env.at("RANK"), std::to_string(r));
  }
  EXPECT_EQ(s->tasks[0].node, c->node(NodeId(3)).name);
  EXPECT_EQ(s->master_addr, c->node(NodeId(3)).name);  // rank 0's host
  // An order that does not match the placed tasks falls back to the rule.
  kept.rank_order = {0, 1};
  EXPECT_EQ(ComputeLaunchSpec(*c, j, moved, kept)->tasks[0].task, 1);
}

}  // namespace
}  // namespace berth::workload
