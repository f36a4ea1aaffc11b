// What a node agent declares about its machine: its name, GPUs, CPU, memory
// and place in the topology, from a node.yaml, from nvidia-smi, or from the
// machine itself.
//
//   # node.yaml (every key optional)
//   name: gpu-7
//   cpu_milli: 64000          # default: the machine's cores x 1000
//   memory_mib: 262144        # default: MemTotal of /proc/meminfo
//   gpus:                     # default: nvidia-smi, else none
//     - {index: 0, type: H100, memory_mib: 81920}
//   labels: {spine: spine-0, leaf: leaf-1, nvlink: nvl-7}
//   address: 10.0.3.7         # where peers reach it (default: its name)
//
//   StatusOr<NodeConfig> c = LoadNodeConfig("node.yaml");
//   c->gpus = ParseNvidiaSmiCsv("index, name, memory.total [MiB]\n0, NVIDIA H100 80GB HBM3, 81559 MiB\n");
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "berth/common/status.h"

namespace berth::agent {

struct GpuInfo {
  int32_t index = 0;  // the device index (what CUDA_VISIBLE_DEVICES names)
  std::string type;   // e.g. H100 (the server resolves aliases through its catalog)
  int64_t memory_mib = 0;
};

struct NodeConfig {
  std::string name;  // "" = the host name
  int64_t cpu_milli = -1;   // -1 = discover
  int64_t memory_mib = -1;  // -1 = discover
  bool gpus_given = false;  // the file lists gpus (maybe none): no discovery
  std::vector<GpuInfo> gpus;
  std::string region, cluster, spine, leaf, nvlink;
  std::string address;  // where peers reach this node (MASTER_ADDR); "" = its name
};

// Parses a node.yaml. Errors name the file and the key ("node.yaml: gpus[1].index: expected an integer").
StatusOr<NodeConfig> LoadNodeConfig(const std::string& path);
StatusOr<NodeConfig> ParseNodeConfig(const std::string& text, const std::string& where);

// The output of `nvidia-smi --query-gpu=index,name,memory.total --format=csv`
// (with or without the header line). GPU names are shortened to a type:
// "NVIDIA H100 80GB HBM3" -> "H100", "NVIDIA A100-SXM4-40GB" -> "A100",
// "Tesla V100-SXM2-16GB" -> "V100". Errors name the line.
StatusOr<std::vector<GpuInfo>> ParseNvidiaSmiCsv(const std::string& text);
std::string GpuTypeFromProductName(const std::string& product);

// Fills what the configuration left out: the host name, cores, memory, and
// GPUs from `nvidia_smi` (a command; "" = none) when the file lists no gpus.
// An nvidia-smi that is missing or fails means no GPUs.
Status CompleteNodeConfig(NodeConfig& config, const std::string& nvidia_smi);

}  // namespace berth::agent
