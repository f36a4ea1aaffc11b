// A gang's launch spec (workload/launch.h) as a Kubernetes ConfigMap, written
// by Berth when it binds the gang (docs/launch.md, "Kubernetes mode"). One
// ConfigMap per gang, named from the group ("ml/trainer" ->
// "berth-launch-trainer" in namespace ml), owned by every pod of the gang
// (ownerReferences: the garbage collector deletes it once the last pod is
// gone; Berth deletes it itself when the gang ends). Its data:
//
//   world-size        "4"
//   master            "gpu-03:29517"          (rank 0's address and MASTER_PORT)
//   launcher          "torch" | "tf" | "mpi" | "none"
//   hostfile          the MPI host file ("gpu-03 slots=1\n...")
//   ring              the NCCL ring, ranks in order ("0 1 2 3")
//   pods              one line per rank: "RANK POD NODE"
//   rank-R.env        rank R's environment, KEY=VALUE lines (docker --env-file)
//   rank-R.tf-config  rank R's TF_CONFIG (launcher tf)
//   nccl-topo-NODE.xml  the NCCL topology file of each node of the gang
//   launch.json       the whole spec as GET /v1/jobs/{id}/launch shows it
//
// A ConfigMap holds at most 1 MiB: the parts are added in the order above,
// a whole kind at a time, while the data stays under kMaxLaunchConfigBytes;
// the kinds left out are named in the annotation berth.dev/launch-omitted.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "berth/workload/launch.h"

namespace berth::kube {

inline constexpr size_t kMaxLaunchConfigBytes = 900 * 1024;

struct LaunchPod {
  std::string name, uid;  // a pod of the gang, in task order
};

// "berth-launch-" + the group's name (the part after "namespace/"), made a
// valid object name: lower case, [a-z0-9.-], at most 253 bytes; a name that
// had to change gets 16 hex digits of a hash of the original.
std::string LaunchConfigMapName(const std::string& group);

// The ConfigMap object (apiVersion v1) for the gang `group` ("ns/name") of
// Berth job `job`, whose pods are `pods` (by task index).
nlohmann::json LaunchConfigMap(const std::string& ns, const std::string& group, int64_t job,
                               const workload::LaunchSpec& spec, const std::vector<LaunchPod>& pods);

}  // namespace berth::kube
