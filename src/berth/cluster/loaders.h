// Ways to get a Cluster: a compact spec string, the openb node list, a YAML
// file. LoadCluster() picks by form: a path ending in .yaml/.yml or .csv, or
// else a compact spec.
//
// Compact spec: groups joined by '+', each NODESxGPUS:TYPE with options
//   /leaf=N   nodes per leaf block (default: the whole group is one leaf)
//   /spine=M  leaves per spine (default: all leaves of the group in one spine)
//   /nvl=K    nodes per multi-node NVLink domain (default: each node its own)
//   /cpu=C    CPU cores per node (default 16 per GPU, at least 16)
//   /mem=G    memory GiB per node (default 128 per GPU, at least 64)
//   /cluster=NAME, /region=NAME  (default "c0", "r0")
// e.g. "12500x8:H100/leaf=32/spine=16" or "9x4:V100+9x4:P100+9x4:K80".
#pragma once

#include <string>
#include <string_view>

#include "berth/cluster/cluster.h"
#include "berth/common/status.h"

namespace berth::cluster {

StatusOr<Cluster> ParseClusterSpec(std::string_view spec);

// openb_node_list_*.csv: sn,cpu_milli,memory_mib,gpu,model. One flat leaf.
StatusOr<Cluster> LoadOpenbNodeList(const std::string& path);

// A cluster YAML file (format in docs/cluster-format.md).
StatusOr<Cluster> LoadClusterYaml(const std::string& path);

// Dispatches on the form of `path_or_spec` (see the file comment).
StatusOr<Cluster> LoadCluster(const std::string& path_or_spec);

}  // namespace berth::cluster
