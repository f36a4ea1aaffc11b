// Topology constraints of a Kubernetes gang, read from its PodGroup: the
// whole gang's `spec.topology` and one entry per subgroup in
// `spec.subGroups` (the shape KAI's PodGroup uses: pods join a subgroup with
// the label berth.dev/subgroup, or kai.scheduler/subgroup-name):
//
//   spec:
//     minMember: 5
//     topology: {required: spine, preferred: leaf}
//     subGroups:
//       - {name: workers, topology: {required: leaf, blockTasks: 2, blockLevel: nvlink}}
//
// Each subgroup becomes the task group(s) of its pods, with its own levels
// (docs/kubernetes.md, "Topology"). Every field is checked: a bad one is an
// error that names it, shown on the gang's pods.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "berth/cluster/level.h"
#include "berth/common/status.h"
#include "berth/job/job.h"

namespace berth::kube {

struct TopologyKnobs {
  std::optional<cluster::Level> required, preferred;
  int32_t block_tasks = 0;  // 0: none
  cluster::Level block_level = cluster::Level::kNvlink;
};

struct PodGroupTopology {
  TopologyKnobs gang;                              // spec.topology
  std::map<std::string, TopologyKnobs> subgroups;  // spec.subGroups[].name -> its topology
};

// Parses a PodGroup's spec (absent fields: no constraint). Errors name the
// field: "spec.subGroups[1].topology.required: 'rack' is not a level (...)".
StatusOr<PodGroupTopology> ParsePodGroupTopology(const nlohmann::json& spec);

// A level named in `where` (an annotation, a field); "" is none.
StatusOr<std::optional<cluster::Level>> ParseLevelText(const std::string& where, const std::string& text);

// Sets the job's levels from the gang's knobs (those set override what the
// job has), and each task group's from its subgroup's (`subgroup_of_group`:
// the subgroup of each task group, "" for none); the gang's block size is the
// default of every group whose subgroup gives none.
void ApplyPodGroupTopology(const PodGroupTopology& t, const std::vector<std::string>& subgroup_of_group,
                           job::JobSpec& spec);

}  // namespace berth::kube
