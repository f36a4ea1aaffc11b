// Launch specs: what every task of a placed job needs to start its part of a
// distributed program (docs/launch.md). A pure function of the cluster, the
// job and its placement, computed once per placement:
//
//   LaunchSpec s = *ComputeLaunchSpec(cluster, spec, placements, {});
//   s.tasks[0].env.at("MASTER_ADDR");  // the rank-0 task's node
//
// Rank order (the rule): tasks are ranked by their node's place in the
// topology, then by the lowest GPU index they hold, then by task index. Node
// ids are numbered so that every topology domain is a contiguous range
// (cluster.h), so node order is the order of (region, cluster, spine, leaf,
// NVLink domain, node): neighbouring ranks sit on the fastest links, a leaf's
// ranks are consecutive, and a ring in rank order leaves each leaf once.
//
// Every task gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK,
// MASTER_ADDR, MASTER_PORT (the torchrun / torch.distributed variables),
// CUDA_VISIBLE_DEVICES (its GPUs), BERTH_* variables, the isolation limits of
// a share or a GPU memory request (IsolationEnv); `tf` adds TF_CONFIG;
// `mpi` gives the host file (one line per node in rank order, `slots` = its
// tasks); every spec carries the NCCL ring order and, per node, an NCCL
// topology XML of what Berth's model knows (GPUs, NVLink domain, NICs).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/common/status.h"
#include "berth/framework/cycle.h"
#include "berth/job/job.h"

namespace berth::workload {

struct LaunchOptions {
  // MASTER_PORT is port_min + (job id mod the range's size); TF workers on one
  // node take the next ports, wrapping inside the range.
  int32_t port_min = 29500;
  int32_t port_max = 30499;
  // The address peers reach a node at (an agent registers it). Unset, or
  // nullopt for a node: the node's name.
  std::function<std::optional<std::string>(const std::string& node)> node_address;
  // The task index of each rank, kept from the run's first placement (an
  // in-place repair moves a task and keeps its rank). Empty, or not a
  // permutation of the placed tasks: the rank rule (RankOrder).
  std::vector<int32_t> rank_order;

  // InvalidArgument naming the flag (--launch-ports) when the range is bad.
  Status Validate() const;
};

// One task of the job, in rank order.
struct TaskLaunch {
  int32_t task = -1;  // the job's task index (groups in order)
  std::string group;  // its group's name
  int32_t rank = 0;
  int32_t local_rank = 0;        // among the job's tasks on its node
  int32_t local_world_size = 0;  // the job's tasks on its node
  int32_t node_rank = 0;         // its node among the job's nodes, in rank order
  std::string node;              // node name
  std::string address;           // node address (the name unless one is known)
  std::vector<int32_t> gpus;     // node-local GPU indexes, ascending
  // Everything its process gets: the job's env, then Berth's variables (which
  // win on a clash), sorted by name.
  std::map<std::string, std::string> env;
};

// One node of the job, in node-rank order.
struct NodeLaunch {
  std::string node;
  std::string address;
  int32_t node_rank = 0;
  std::vector<int32_t> ranks;  // the ranks it runs, ascending
  std::string nccl_topology_xml;
};

struct LaunchSpec {
  JobId job;
  job::Launcher launcher = job::Launcher::kNone;
  std::vector<std::string> command;
  int32_t world_size = 0;
  std::string master_addr;
  int32_t master_port = 0;
  std::vector<TaskLaunch> tasks;  // by rank
  std::vector<NodeLaunch> nodes;  // by node rank
  std::string mpi_hostfile;       // "ADDRESS slots=N" lines in rank order (every launcher; mpirun's input)
  std::vector<int32_t> nccl_ring;  // ranks in ring order
};

// The isolation limits of one task's allocation, for the runtime (docs/launch.md
// "GPU sharing limits"): the GPU memory it may use on each of its GPUs (the
// group's gpu_memory_mib; 0: none stated) and, for a share of one GPU, its
// compute share in percent of the GPU's threads (milli_per_gpu / 10, rounded
// up; 0 for whole GPUs). A task whose group states neither gets no limits.
struct IsolationLimits {
  MiB gpu_memory_mib = 0;
  int32_t active_thread_percent = 0;
  bool empty() const { return gpu_memory_mib == 0 && active_thread_percent == 0; }
};
IsolationLimits IsolationOf(const state::Allocation& alloc);

// The variables that carry the limits: BERTH_GPU_MEMORY_LIMIT_MIB=N and
// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT="0=NM,1=NM" (devices as the task sees them,
// numbered in CUDA_VISIBLE_DEVICES order) when memory is stated;
// BERTH_GPU_COMPUTE_PERCENT and CUDA_MPS_ACTIVE_THREAD_PERCENTAGE for a share.
// Empty when the allocation has no limits.
std::map<std::string, std::string> IsolationEnv(const state::Allocation& alloc);

// The rank rule: the task indexes of `placements` in rank order (node in
// topology order, lowest GPU held, task index).
std::vector<int32_t> RankOrder(std::span<const framework::TaskPlacement> placements);

// The launch spec of `job` placed as `placements` (one per task, any order).
// Errors: FailedPrecondition when nothing is placed; InvalidArgument when a
// placement names a task or node the job or cluster lacks, or a task twice.
StatusOr<LaunchSpec> ComputeLaunchSpec(const cluster::Cluster& cluster, const job::JobSpec& job,
                                       std::span<const framework::TaskPlacement> placements,
                                       const LaunchOptions& options);

// The NCCL topology XML (NCCL_TOPO_FILE's schema) of one node as Berth's
// model knows it: its GPUs with NVLink to the node's NVLink domain, one NIC
// per GPU at the leaf's bandwidth. PCI bus ids are placeholders
// (0000:XX:00.0 with XX = GPU index + 1; NICs from 0x81): Berth does not know
// them; an agent substitutes the real ones before pointing NCCL at the file.
std::string NcclTopologyXml(const cluster::Cluster& cluster, NodeId node, std::span<const int32_t> job_gpus);

}  // namespace berth::workload
