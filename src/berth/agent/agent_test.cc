// The agent's pure pieces: the run list it is sent and the task environment.
#include "berth/agent/agent.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace berth::agent {
namespace {

using nlohmann::json;

TEST(AgentTest, ParsesRunLists) {
  auto run = ParseRunList(json::parse(
      R"([{"job":3,"generation":2,"task":1,"tasks":2,"gpus":[0,2],"cpu_milli":100,"memory_mib":64,
           "command":["/bin/sh","-c","true"],"env":{"A":"1"},"launch_env":{"RANK":"1"}}])"));
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_EQ(run->size(), 1u);
  const Assignment& a = (*run)[0];
  EXPECT_EQ(a.job, 3);
  EXPECT_EQ(a.generation, 2);
  EXPECT_EQ(a.gpus, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(a.env.at("A"), "1");
  EXPECT_EQ(a.launch_env.at("RANK"), "1");
  EXPECT_FALSE(ParseRunList(json::parse(R"([{"job":3,"task":0}])")).ok());
  EXPECT_FALSE(ParseRunList(json::parse(R"([{"job":3,"generation":1,"task":0,"gpus":["x"]}])")).ok());
  EXPECT_FALSE(ParseRunList(json::parse(R"({"job":3})")).ok());
}

TEST(AgentTest, TaskEnvironmentPutsBerthLast) {
  Assignment a;
  a.job = 5;
  a.generation = 1;
  a.task = 1;
  a.tasks = 2;
  a.gpus = {0, 1};
  a.env = {{"HOME", "/job"}, {"CUDA_VISIBLE_DEVICES", "9"}, {"X", "job"}};
  a.launch_env = {{"X", "launch"}, {"RANK", "1"}};
  // The node's GPUs 4..7: Berth's positions 0 and 1 are devices 4 and 5.
  std::vector<GpuInfo> gpus = {{4, "H100", 0}, {5, "H100", 0}, {6, "H100", 0}, {7, "H100", 0}};
  auto env = BuildTaskEnv({"PATH=/bin", "HOME=/root"}, a, gpus, "n1");
  auto has = [&](const std::string& kv) { return std::find(env.begin(), env.end(), kv) != env.end(); };
  EXPECT_TRUE(has("PATH=/bin"));
  EXPECT_TRUE(has("HOME=/job"));
  EXPECT_TRUE(has("X=launch"));
  EXPECT_TRUE(has("RANK=1"));
  EXPECT_TRUE(has("CUDA_VISIBLE_DEVICES=4,5"));
  EXPECT_TRUE(has("BERTH_JOB_ID=5"));
  EXPECT_TRUE(has("BERTH_TASK_INDEX=1"));
  EXPECT_TRUE(has("BERTH_TASK_COUNT=2"));
  EXPECT_TRUE(has("BERTH_NODE=n1"));
  EXPECT_TRUE(std::is_sorted(env.begin(), env.end()));
  a.gpus.clear();
  EXPECT_TRUE([&] {
    auto e = BuildTaskEnv({}, a, gpus, "n1");
    return std::find(e.begin(), e.end(), "CUDA_VISIBLE_DEVICES=") != e.end();
  }());
}

}  // namespace
}  // namespace berth::agent

namespace berth::agent {
namespace {

TEST(AgentTest, ParsesTheGpuHealthFile) {
  auto g = ParseGpuHealth("# failed GPUs (XID 79)\n3, 5\n\n7 3  # again\n");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(*g, (std::vector<int32_t>{3, 5, 7}));
  EXPECT_TRUE(ParseGpuHealth("").value().empty());
  auto bad = ParseGpuHealth("1\ngpu2\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(ParseGpuHealth("-1").ok());
}

}  // namespace
}  // namespace berth::agent

namespace berth::agent {
namespace {

TEST(AgentTest, ANewAttemptIsAnotherTaskWithItsOwnDirectory) {
  auto run = ParseRunList(json::parse(
      R"([{"job":3,"generation":2,"task":1,"attempt":2,"command":["true"],
           "peers":[{"task":0,"rank":0,"node":"n1","address":"10.0.0.1","attempt":0}]},
          {"job":3,"generation":2,"task":0,"command":["true"]}])"));
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ((*run)[0].attempt, 2);
  EXPECT_NE((*run)[0].peers.find("10.0.0.1"), std::string::npos);
  EXPECT_EQ((*run)[1].attempt, 0);  // absent: the first attempt
  EXPECT_TRUE((*run)[1].peers.empty());
  EXPECT_FALSE(ParseRunList(json::parse(R"([{"job":3,"generation":1,"task":0,"attempt":-1}])")).ok());
  EXPECT_FALSE(ParseRunList(json::parse(R"([{"job":3,"generation":1,"task":0,"peers":{}}])")).ok());
  EXPECT_EQ(TaskDir("/w", 3, 2, 1, 0), "/w/tasks/job-3/run-2/task-1");
  EXPECT_EQ(TaskDir("/w", 3, 2, 1, 2), "/w/tasks/job-3/run-2/task-1.attempt-2");
  auto env = BuildTaskEnv({}, (*run)[0], {}, "n2", "", "/w/peers.json");
  EXPECT_NE(std::find(env.begin(), env.end(), "BERTH_TASK_ATTEMPT=2"), env.end());
  EXPECT_NE(std::find(env.begin(), env.end(), "BERTH_PEERS_FILE=/w/peers.json"), env.end());
}

}  // namespace
}  // namespace berth::agent
