// The supervisor runs a real process, writes its pid and exit status, and the
// task's process group takes the agent's signals.
#include "berth/agent/supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace berth::agent {
namespace {

std::string TempDir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/berth-supervisor-" + name + "-" + std::to_string(::getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// Runs the supervisor in a forked child (as `berth agent-supervise` would).
pid_t Supervise(const std::string& dir) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(RunSupervisor(dir));
  return pid;
}

int WaitExit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(SupervisorTest, RunsTheTaskAndWritesItsExit) {
  const std::string dir = TempDir("run");
  TaskSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo out=$FOO; echo err >&2; pwd; exit 3"};
  spec.env = {"FOO=bar", "PATH=/usr/bin:/bin"};
  ASSERT_TRUE(WriteTaskSpec(dir, spec).ok());
  EXPECT_EQ(WaitExit(Supervise(dir)), 0);
  EXPECT_EQ(ReadExitStatus(dir), 3);
  EXPECT_TRUE(ReadTaskPid(dir).has_value());
  const std::string log = Slurp(dir + "/output.log");
  EXPECT_NE(log.find("out=bar"), std::string::npos) << log;
  EXPECT_NE(log.find("err"), std::string::npos);
  EXPECT_NE(log.find(std::filesystem::path(dir).filename().string()), std::string::npos);  // cwd: the task dir
}

TEST(SupervisorTest, MissingProgramExits127) {
  const std::string dir = TempDir("missing");
  TaskSpec spec;
  spec.argv = {"no-such-program-berth"};
  spec.env = {"PATH=/usr/bin:/bin"};
  ASSERT_TRUE(WriteTaskSpec(dir, spec).ok());
  EXPECT_EQ(WaitExit(Supervise(dir)), 0);
  EXPECT_EQ(ReadExitStatus(dir), 127);
  EXPECT_NE(Slurp(dir + "/output.log").find("cannot execute"), std::string::npos);
}

TEST(SupervisorTest, SigtermThenSigkillReachTheProcessGroup) {
  const std::string dir = TempDir("kill");
  TaskSpec spec;
  // Ignores SIGTERM: only SIGKILL ends it.
  spec.argv = {"/bin/sh", "-c", "trap 'echo got-term' TERM; while true; do sleep 0.05; done"};
  spec.env = {"PATH=/usr/bin:/bin"};
  ASSERT_TRUE(WriteTaskSpec(dir, spec).ok());
  const pid_t sup = Supervise(dir);
  std::optional<pid_t> pid;
  for (int i = 0; i < 400 && !(pid = ReadTaskPid(dir)); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(pid.has_value());
  EXPECT_TRUE(ProcessAlive(sup));
  EXPECT_FALSE(SupervisorAlive(sup, dir));  // a forked test process, not `berth agent-supervise DIR`
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the trap is set
  ::kill(-*pid, SIGTERM);
  for (int i = 0; i < 200 && Slurp(dir + "/output.log").find("got-term") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_NE(Slurp(dir + "/output.log").find("got-term"), std::string::npos);
  EXPECT_FALSE(ReadExitStatus(dir).has_value());  // still running
  ::kill(-*pid, SIGKILL);
  EXPECT_EQ(WaitExit(sup), 0);
  EXPECT_EQ(ReadExitStatus(dir), 128 + SIGKILL);
  EXPECT_FALSE(ProcessAlive(*pid));
}

}  // namespace
}  // namespace berth::agent
