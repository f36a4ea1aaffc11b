// Ways to get a Cluster: a compact spec string, the openb node list, the
// Alibaba PAI machine table, a YAML file. LoadCluster() picks by form: a path
// containing "pai_machine_spec", a path ending in .yaml/.yml or .csv, or else a
// compact spec.
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

// Appends the nodes of a compact spec to `builder`. `cursor` carries the node
// and group numbering across calls, so that several specs (the `groups:` of a
// YAML file) make one cluster with unique names.
struct SpecCursor {
  int64_t next_node = 0;
  int64_t next_group = 0;
};
Status AddSpecGroups(std::string_view spec, ClusterBuilder& builder, SpecCursor& cursor);

// openb_node_list_*.csv: sn,cpu_milli,memory_mib,gpu,model. One flat leaf.
StatusOr<Cluster> LoadOpenbNodeList(const std::string& path);

// The Alibaba PAI 2020 machine table (cluster-trace-gpu-v2020
// pai_machine_spec): machine,gpu_type,cap_cpu,cap_mem,cap_gpu, no header. Reads
// the published pai_machine_spec.tar.gz (the CSV is taken from the archive in
// memory) or an extracted .csv. One flat leaf, machines in file order;
// gpu_type CPU means a CPU-only machine; cap_mem is in GB (read as GiB).
StatusOr<Cluster> LoadPaiMachineSpec(const std::string& path);

// A cluster YAML file (format in docs/cluster-format.md). Errors name the
// file, line and key ("x.yaml:12: nodes[3].gpus: expected an integer").
StatusOr<Cluster> LoadClusterYaml(const std::string& path);
// The same from text; `source_name` stands for the file name in errors.
StatusOr<Cluster> ParseClusterYaml(std::string_view text, std::string_view source_name);

// Dispatches on the form of `path_or_spec` (see the file comment).
StatusOr<Cluster> LoadCluster(const std::string& path_or_spec);

}  // namespace berth::cluster
