// agent.json round trips; a missing file is an empty state.
#include "berth/agent/agent_state.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace berth::agent {
namespace {

std::string TempDir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/berth-agent-state-" + name + "-" + std::to_string(::getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

TEST(AgentStateTest, RoundTrips) {
  const std::string dir = TempDir("rt");
  auto empty = LoadAgentState(dir);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->agent_id.empty());
  AgentState s;
  s.agent_id = NewAgentId().value();
  EXPECT_EQ(s.agent_id.size(), 32u);
  TaskRecord r;
  r.job = 7;
  r.generation = 2;
  r.task = 1;
  r.attempt = 2;
  r.dir = dir + "/t";
  r.state = TaskRecord::State::kExited;
  r.exit_code = 3;
  r.supervisor = 1234;
  r.log_sent = 99;
  r.reported = true;
  s.tasks.push_back(r);
  ASSERT_TRUE(SaveAgentState(dir, s).ok());
  auto back = LoadAgentState(dir);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->agent_id, s.agent_id);
  ASSERT_EQ(back->tasks.size(), 1u);
  EXPECT_EQ(back->tasks[0].key(), r.key());
  EXPECT_EQ(back->tasks[0].attempt, 2);
  EXPECT_EQ(back->tasks[0].state, TaskRecord::State::kExited);
  EXPECT_EQ(back->tasks[0].exit_code, 3);
  EXPECT_EQ(back->tasks[0].log_sent, 99);
  EXPECT_TRUE(back->tasks[0].reported);
  EXPECT_NE(NewAgentId().value(), s.agent_id);
}

TEST(AgentStateTest, AFileWithoutAttemptsReadsAsFirstAttempts) {
  const std::string dir = TempDir("old");
  std::ofstream(dir + "/agent.json")
      << R"({"agent_id":"x","tasks":[{"job":1,"generation":1,"task":0,"dir":"d","state":"running"}]})";
  auto s = LoadAgentState(dir);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->tasks.size(), 1u);
  EXPECT_EQ(s->tasks[0].attempt, 0);
}

TEST(AgentStateTest, MalformedFileIsAnError) {
  const std::string dir = TempDir("bad");
  std::ofstream(dir + "/agent.json") << "{not json";
  auto s = LoadAgentState(dir);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("agent.json"), std::string::npos);
}

}  // namespace
}  // namespace berth::agent
