// The server's encoding of store record bodies (JSON), and the check that a
// job could ever run on the cluster.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/framework/plugin.h"
#include "berth/job/job.h"
#include "berth/job/lifecycle.h"

namespace berth::server {

// kJobAccepted: {"spec":{...job...},"fingerprint":"..."}.
std::string EncodeAccepted(const job::JobSpec& spec, const std::string& fingerprint);
Status DecodeAccepted(const std::string& body, job::JobSpec& spec, std::string& fingerprint);

// kJobStarted: [{"task":0,"node":"n0","gpus":3,"milli":1000,"cpu":8000,"mem":1024}, ...]
// (node by name, so a restart with a renumbered cluster still finds it).
std::string EncodePlacements(const cluster::Cluster& cluster, std::span<const framework::TaskPlacement> placements);
StatusOr<std::vector<framework::TaskPlacement>> DecodePlacements(const cluster::Cluster& cluster, JobId job,
                                                                  const std::string& body);

// kTaskRepaired: {"generation":2,"task":1,"attempt":1,"placement":{"task":1,"node":"n4",...}}
// (one task of run `generation` restarted in place as `attempt`, on the
// placement given as in kJobStarted).
struct TaskRepair {
  int32_t generation = 0;
  int32_t attempt = 0;
  framework::TaskPlacement placement;
};
std::string EncodeRepair(const cluster::Cluster& cluster, int32_t generation, int32_t attempt,
                         const framework::TaskPlacement& placement);
StatusOr<TaskRepair> DecodeRepair(const cluster::Cluster& cluster, JobId job, const std::string& body);

// kJobFinished / kJobRequeued: {"state":"succeeded","reason":"..."}.
std::string EncodeEnd(job::JobState state, const std::string& reason);
Status DecodeEnd(const std::string& body, job::JobState& state, std::string& reason);

// kNodeState: {"quarantined":true,"failures":3,"draining":true,"drain_deadline_us":...}
// (a node's operator and failure state; draining and its deadline, the wall
// clock in microseconds or -1, are left out when not draining and read as
// false and -1 from older records).
struct NodeRecord {
  bool quarantined = false;
  int64_t failures = 0;
  bool draining = false;
  TimeUs drain_deadline = -1;
};
std::string EncodeNode(const NodeRecord& node);
StatusOr<NodeRecord> DecodeNode(const std::string& body);

// kNodeFailed: {"weight":1} (one failure of the node named by the record's
// key at the record's time, as fed to the failure history; weight > 0).
std::string EncodeNodeFailure(double weight);
StatusOr<double> DecodeNodeFailure(const std::string& body);

// kClusterInfo: {"fingerprint":"9f...","summary":"64 nodes, 512 GPUs; ...","nodes":64,"gpus":512}.
// The fingerprint hashes every node's name, GPU type and count, CPU, memory
// and topology domains (FNV-1a, 16 hex digits): equal clusters give equal
// fingerprints whatever the file they were loaded from.
struct ClusterInfo {
  std::string fingerprint, summary;
  int64_t nodes = 0, gpus = 0;
};
ClusterInfo DescribeCluster(const cluster::Cluster& cluster);
std::string EncodeClusterInfo(const ClusterInfo& info);
Status DecodeClusterInfo(const std::string& body, ClusterInfo& info);

// OK if some node of the cluster could hold every task of the job and the
// cluster has GPUs enough for its gang minimum; else InvalidArgument naming
// the group and the reason ("no H100 node has 16 GPUs").
Status CheckFeasible(const cluster::Cluster& cluster, const job::JobSpec& spec);

std::optional<job::JobState> ParseJobState(const std::string& name);

}  // namespace berth::server
