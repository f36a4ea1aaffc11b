// One task's supervisor: a small process (`berth agent-supervise DIR`) that
// starts the task, waits for it and writes its exit status to a file, so that
// an agent that restarted (and is not the task's parent any more) still learns
// how the task ended. The agent only ever starts supervisors; it signals the
// task's process group and reads the files.
//
// The task directory holds:
//   spec.json   what to run (written by the agent before the supervisor starts)
//   pid         the task's pid, which is also its process group (written by the supervisor)
//   exit        its exit status: the code, or 128 + the signal that ended it
//   output.log  its stdout and stderr
//   cgroup      what cgroup v2 limits were applied, or why none were
//
//   TaskSpec spec{.argv = {"/bin/sh", "-c", "echo hi"}, .env = {"PATH=/usr/bin"}};
//   WriteTaskSpec(dir, spec);
//   StatusOr<int> sup = SpawnSupervisor("/usr/bin/berth", dir);  // fork + exec
//   ...
//   std::optional<int> code = ReadExitStatus(dir);
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "berth/common/status.h"

namespace berth::agent {

struct TaskSpec {
  std::vector<std::string> argv;  // argv[0] is looked up on the task's PATH
  std::vector<std::string> env;   // "KEY=VALUE", the whole environment
  std::string cwd;                // "" = the task directory
  int64_t memory_max_bytes = 0;   // cgroup memory.max (0 = none)
  int64_t cpu_max_milli = 0;      // cgroup cpu.max (0 = none)
  std::string cgroup_name;        // the leaf cgroup's name ("" = no cgroup)
};

Status WriteTaskSpec(const std::string& dir, const TaskSpec& spec);
StatusOr<TaskSpec> ReadTaskSpec(const std::string& dir);

// The supervisor's body (the hidden `berth agent-supervise DIR`): runs the
// task in DIR and returns after writing its exit status. Returns the process
// exit code for the supervisor itself (0 when the status was written).
int RunSupervisor(const std::string& dir);

// Forks and execs `exe agent-supervise DIR` in a session of its own. Returns
// the supervisor's pid.
StatusOr<pid_t> SpawnSupervisor(const std::string& exe, const std::string& dir);

// The task's exit status, once its supervisor wrote it.
std::optional<int> ReadExitStatus(const std::string& dir);
// The task's pid (= its process group), once its supervisor started it.
std::optional<pid_t> ReadTaskPid(const std::string& dir);
// Whether process `pid` is alive (not a zombie).
bool ProcessAlive(pid_t pid);
// Whether the supervisor of `dir` is alive: process `pid` runs with `dir` on its command line.
bool SupervisorAlive(pid_t pid, const std::string& dir);

}  // namespace berth::agent
