// Compact cluster specs ("12500x8:H100/leaf=32/spine=16") and the dispatcher.
#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "berth/cluster/loaders.h"

namespace berth::cluster {
namespace {

bool ParsePositive(std::string_view s, int64_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && out > 0;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string_view::npos ? std::string_view::npos : p - start));
    if (p == std::string_view::npos) break;
    start = p + 1;
  }
  return out;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

Status AddSpecGroups(std::string_view spec, ClusterBuilder& b, SpecCursor& cursor) {
  if (spec.empty()) return InvalidArgument("empty cluster spec");
  auto groups = Split(spec, '+');
  for (std::string_view group : groups) {
    const int64_t gi = cursor.next_group++;
    std::string where = "cluster spec group " + std::to_string(gi + 1) + " '" + std::string(group) + "'";
    auto opts = Split(group, '/');
    std::string_view head = opts[0];
    size_t x = head.find('x'), colon = head.find(':');
    if (x == std::string_view::npos || colon == std::string_view::npos || colon < x)
      return InvalidArgument(where + ": expected NODESxGPUS:TYPE");
    int64_t nodes = 0, gpus = 0;
    if (!ParsePositive(head.substr(0, x), nodes)) return InvalidArgument(where + ": bad node count");
    std::string_view gpus_text = head.substr(x + 1, colon - x - 1);
    if (gpus_text != "0" && !ParsePositive(gpus_text, gpus)) return InvalidArgument(where + ": bad GPU count");
    std::string type(head.substr(colon + 1));
    if (type.empty() && gpus > 0) return InvalidArgument(where + ": missing GPU type");
    if (gpus > kMaxGpusPerNode) return InvalidArgument(where + ": too many GPUs per node");
    if (nodes > 10'000'000) return InvalidArgument(where + ": too many nodes");
    int64_t leaf = nodes, spine = 0, nvl = 1, cpu = std::max<int64_t>(16, 16 * gpus),
            mem_gib = std::max<int64_t>(64, 128 * gpus);
    std::string cluster_name = "c0", region = "r0";
    for (size_t k = 1; k < opts.size(); ++k) {
      size_t eq = opts[k].find('=');
      if (eq == std::string_view::npos) return InvalidArgument(where + ": option '" + std::string(opts[k]) + "' needs =");
      std::string_view key = opts[k].substr(0, eq), val = opts[k].substr(eq + 1);
      int64_t* target = key == "leaf" ? &leaf : key == "spine" ? &spine : key == "nvl" ? &nvl
                      : key == "cpu" ? &cpu : key == "mem" ? &mem_gib : nullptr;
      if (key == "cluster") { cluster_name = std::string(val); continue; }
      if (key == "region") { region = std::string(val); continue; }
      if (!target) return InvalidArgument(where + ": unknown option '" + std::string(key) + "'");
      if (!ParsePositive(val, *target)) return InvalidArgument(where + ": option " + std::string(key) + " must be a positive integer");
    }
    if (spine == 0) spine = (nodes + leaf - 1) / leaf;
    for (int64_t i = 0; i < nodes; ++i) {
      const int64_t node_no = cursor.next_node++;
      NodeSpec s;
      s.name = "node-" + std::to_string(node_no);
      s.cpu_milli = cpu * 1000;
      s.memory_mib = mem_gib * 1024;
      s.gpu_count = static_cast<int32_t>(gpus);
      s.gpu_type = gpus > 0 ? type : "";
      s.region = region;
      s.cluster = cluster_name;
      int64_t leaf_no = i / leaf;
      s.spine = "g" + std::to_string(gi) + "-spine-" + std::to_string(leaf_no / spine);
      s.leaf = "g" + std::to_string(gi) + "-leaf-" + std::to_string(leaf_no);
      if (nvl > 1) s.nvlink = "g" + std::to_string(gi) + "-nvl-" + std::to_string(i / nvl);
      b.AddNode(std::move(s));
    }
  }
  return Status::Ok();
}

StatusOr<Cluster> ParseClusterSpec(std::string_view spec) {
  ClusterBuilder b;
  SpecCursor cursor;
  BERTH_RETURN_IF_ERROR(AddSpecGroups(spec, b, cursor));
  return std::move(b).Build();
}

StatusOr<Cluster> LoadCluster(const std::string& path_or_spec) {
  if (path_or_spec.find("pai_machine_spec") != std::string::npos) return LoadPaiMachineSpec(path_or_spec);
  if (EndsWith(path_or_spec, ".csv")) return LoadOpenbNodeList(path_or_spec);
  if (EndsWith(path_or_spec, ".yaml") || EndsWith(path_or_spec, ".yml")) return LoadClusterYaml(path_or_spec);
  return ParseClusterSpec(path_or_spec);
}

}  // namespace berth::cluster
