// The documents of the node API (docs/agent.md): what `berth agent` sends to
// register, heartbeat and report a task's end, parsed strictly (the bounded
// parser; unknown keys, wrong types and out-of-range values are errors naming
// the field).
//
//   {"name":"gpu-1","agent_id":"5f0c...","cpu_milli":64000,"memory_mib":262144,
//    "gpus":[{"index":0,"type":"H100","memory_mib":81920}],
//    "labels":{"leaf":"leaf-1","spine":"spine-0"}}                 register
//   {"name":"gpu-1","agent_id":"5f0c...",
//    "tasks":[{"job":3,"generation":1,"task":0,"attempt":1,"state":"running"}],
//    "failed_gpus":[5]}                                               heartbeat
//   {"name":"gpu-1","agent_id":"5f0c...","job":3,"generation":1,"task":0,
//    "state":"exited","exit_code":0}                                  status
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/common/status.h"

namespace berth::server {

inline constexpr size_t kMaxAgentGpus = 64;
inline constexpr size_t kMaxAgentTasks = 4096;  // tasks one heartbeat may report

struct AgentGpu {
  int32_t index = 0;  // the device index on the machine (CUDA_VISIBLE_DEVICES)
  std::string type;
  int64_t memory_mib = 0;
};

struct AgentRegistration {
  std::string name;
  std::string agent_id;  // stable across the agent's restarts (kept in its work dir)
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  std::vector<AgentGpu> gpus;
  std::string region, cluster, spine, leaf, nvlink;  // topology labels ("" = the default)
  std::string address;  // where peers reach the node (launch specs' MASTER_ADDR); "" = its name
  // The node as the cluster model sees it (GPUs of one type).
  cluster::NodeSpec ToNodeSpec() const;
};

struct AgentTaskReport {
  int64_t job = -1;
  int32_t generation = 0;
  int32_t task = -1;
  // The task's attempt within its run: 0 first, then one more each time the
  // task alone restarts (an in-place repair). Absent in a report: 0.
  int32_t attempt = 0;
  enum class State { kRunning, kExited, kLost } state = State::kRunning;
  int32_t exit_code = 0;  // kExited: the status (128 + signal when killed)
};

struct AgentHeartbeat {
  std::string name;
  std::string agent_id;
  std::vector<AgentTaskReport> tasks;
  // The device indexes (AgentGpu::index) of the node's GPUs that failed
  // (XID-style errors, a health check): every heartbeat says the whole set,
  // so a GPU left out is healthy again. Absent: none.
  std::vector<int32_t> failed_gpus;
};

struct AgentStatus {
  std::string name;
  std::string agent_id;
  AgentTaskReport report;
};

// Errors: InvalidArgument naming the field ("gpus[1].type: expected a
// string"), e.g. GPUs of two types on one node, duplicate GPU indexes.
StatusOr<AgentRegistration> ParseAgentRegistration(const std::string& body);
StatusOr<AgentHeartbeat> ParseAgentHeartbeat(const std::string& body);
StatusOr<AgentStatus> ParseAgentStatus(const std::string& body);

// The registration as stored (the same document ParseAgentRegistration reads).
std::string EncodeAgentRegistration(const AgentRegistration& r);

}  // namespace berth::server
