// The agent's durable state, kept in WORK_DIR/agent.json (written through a
// temporary file and a rename): its identity, and every task it started with
// what it knows of it. A task is recorded before its supervisor starts, so a
// restarted agent never starts a task twice: a task it has a record of is
// re-attached (its supervisor or process still runs), read (its exit status is
// on disk), or reported lost, never started again. A task is known by
// (job, run, task, attempt): a new attempt of a task (the server restarts
// that task alone, docs/agent.md "In-place repair") is another record.
//
//   AgentState s = LoadAgentState("/var/lib/berth-agent").value();
//   s.tasks.push_back(TaskRecord{.job = 3, .generation = 1, .task = 0});
//   SaveAgentState("/var/lib/berth-agent", s);
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "berth/common/status.h"

namespace berth::agent {

struct TaskRecord {
  int64_t job = -1;
  int32_t generation = 0;
  int32_t task = -1;
  int32_t attempt = 0;  // 0, then one more per in-place restart of this task alone (its own directory)
  std::string dir;  // the task directory (supervisor.h)
  enum class State { kStarting, kRunning, kExited, kLost } state = State::kStarting;
  int32_t exit_code = 0;        // kExited
  pid_t supervisor = 0;
  int64_t log_sent = 0;         // bytes of output.log the server has
  bool reported = false;        // the server has its end (or does not want it)
  bool stopping = false;        // Berth asked it to stop: SIGTERM sent
  int64_t term_at_ms = 0;       // wall clock of the SIGTERM
  bool killed = false;          // SIGKILL sent
  int64_t forgotten_at_ms = 0;  // no longer assigned (kept a while: never run again)

  auto key() const { return std::tuple(job, generation, task, attempt); }
  bool ended() const { return state == State::kExited || state == State::kLost; }
};

const char* TaskStateName(TaskRecord::State s);

struct AgentState {
  std::string agent_id;
  std::vector<TaskRecord> tasks;
};

// A missing file is an empty state (agent_id ""). Errors: unreadable or
// malformed file, naming it.
StatusOr<AgentState> LoadAgentState(const std::string& work_dir);
Status SaveAgentState(const std::string& work_dir, const AgentState& state);

// 32 hex characters from /dev/urandom.
StatusOr<std::string> NewAgentId();

}  // namespace berth::agent
