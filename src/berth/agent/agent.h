// `berth agent`: the node agent (docs/agent.md). It registers the node with
// `berth serve`, heartbeats, and makes the node run what the heartbeat answers
// list: every listed task it has no record of is started under a supervisor
// (supervisor.h), every task it runs that is no longer listed is stopped
// (SIGTERM to its process group, SIGKILL after the grace). Exits are reported
// once the task's log is uploaded; a task attempt is started at most once
// (agent_state.h), across restarts of the agent and of the server. The
// server may list a new attempt of one task of a run (an in-place repair):
// that is a new task to start; the old attempt, no longer listed, stops.
//
// One thread; every call to the server has a timeout, and a server that does
// not answer only delays reports: the tasks keep running.
//
//   AgentOptions o{.server = "http://head:7450", .node_token = "...", .work_dir = "/var/lib/berth-agent"};
//   Agent agent(o, config);   // config: node_config.h, completed
//   int code = agent.Run(stop_flag);
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "berth/agent/agent_state.h"
#include "berth/agent/node_config.h"
#include "berth/common/status.h"

namespace berth::agent {

struct AgentOptions {
  std::string server;      // http://HOST:PORT
  std::string node_token;  // the server's --node-token-file contents
  std::string work_dir = "./berth-agent";
  std::string supervisor_exe;  // the berth binary (agent-supervise); "" = /proc/self/exe
  int64_t tick_ms = 100;       // the loop's period (process polling, log uploads)
  // A file listing the device indexes of this node's failed GPUs (written by
  // an XID or DCGM health watcher), read at every heartbeat and sent as
  // failed_gpus; a missing or empty file: none failed. "" = no health file.
  std::string gpu_health_file;
};

// The GPU health file: device indexes separated by spaces, commas or
// newlines; '#' starts a comment to the end of the line. Errors name the
// line ("line 2: 'x' is not a GPU index").
StatusOr<std::vector<int32_t>> ParseGpuHealth(const std::string& text);

// One task as a heartbeat answer lists it.
struct Assignment {
  int64_t job = -1;
  int32_t generation = 0;
  int32_t task = -1;
  int32_t attempt = 0;             // the task's attempt in its run ("attempt"; absent: 0)
  int32_t tasks = 1;               // the job's task count
  std::vector<int32_t> gpus;       // Berth's GPU positions on this node (0.. the node's GPU count)
  int64_t cpu_milli = 0, memory_mib = 0;
  std::vector<std::string> command;
  std::map<std::string, std::string> env;         // the job's env
  std::map<std::string, std::string> launch_env;  // the launch spec's (when the server sends one)
  std::string mpi_hostfile;  // the launch spec's host file ("" = none): written to the task dir
  // Every task of the run as it is placed now ("peers", a JSON array of
  // {"task","rank","node","address","attempt"}; "" = not sent): written to
  // the task dir as peers.json at the start, and again whenever it changes
  // (a peer moved), so a running task learns of its new peer.
  std::string peers;
};

// Errors name the field ("run[2].gpus: ...").
StatusOr<std::vector<Assignment>> ParseRunList(const nlohmann::json& run);

// The task's environment: the agent's own (`base`, "K=V"), then the job's
// env, then the launch env, then Berth's variables, which win:
// CUDA_VISIBLE_DEVICES (the device indexes of the chosen GPUs, comma-
// separated; "" without GPUs), BERTH_JOB_ID, BERTH_TASK_INDEX, BERTH_TASK_COUNT,
// BERTH_RUN (the generation), BERTH_TASK_ATTEMPT, BERTH_NODE,
// BERTH_MPI_HOSTFILE (when `hostfile` is not empty) and BERTH_PEERS_FILE
// (when `peers_file` is not empty). Sorted by name.
std::vector<std::string> BuildTaskEnv(const std::vector<std::string>& base, const Assignment& a,
                                      const std::vector<GpuInfo>& node_gpus, const std::string& node_name,
                                      const std::string& hostfile = "", const std::string& peers_file = "");

// The directory of a task attempt under the work dir: tasks/job-J/run-G/task-T
// (attempt 0), tasks/job-J/run-G/task-T.attempt-A after.
std::string TaskDir(const std::string& work_dir, int64_t job, int32_t generation, int32_t task, int32_t attempt);

class Agent {
 public:
  Agent(AgentOptions options, NodeConfig config);
  // Runs until `stop` is set (then returns 0; tasks keep running) or a fatal
  // refusal by the server (wrong token, the name taken by another agent, a
  // registration refused: returns 1 after saying why on stderr).
  int Run(const std::atomic<bool>& stop);

 private:
  struct Reply {
    int status = 0;  // 0: no answer
    nlohmann::json body;
    std::string error;
  };
  Reply Post(const std::string& path, const std::string& body, const std::string& content_type = "application/json");
  Status Register();
  void Heartbeat();
  void Reconcile(const std::vector<Assignment>& run);
  void Start(const Assignment& a);
  // Writes the peers file (and the MPI host file) of a running task when
  // the server's listing of them changed.
  void UpdatePeers(const TaskRecord& r, const Assignment& a);
  void Poll();
  void StopTasks();
  void UploadLogs(TaskRecord& r, bool all);
  void ReportExits();
  void Save();
  void Log(const std::string& event, nlohmann::json fields) const;

  AgentOptions options_;
  NodeConfig config_;
  AgentState state_;
  bool dirty_ = false;
  bool registered_ = false;
  bool fatal_ = false;
  std::string fatal_reason_;
  int64_t heartbeat_ms_ = 1000;
  int64_t kill_grace_ms_ = 10'000;
  int64_t next_beat_ms_ = 0;
  int64_t failures_logged_ = 0;
  std::string gpu_health_error_;  // the health file's last error (logged once per change)
  std::vector<int32_t> failed_gpus_;  // as last read from the health file
  // Per task attempt: the peers and host file last written to its directory.
  std::map<std::tuple<int64_t, int32_t, int32_t, int32_t>, std::pair<std::string, std::string>> written_peers_;
};

}  // namespace berth::agent
