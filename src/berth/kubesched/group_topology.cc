// PodGroup topology: spec.topology and spec.subGroups (group_topology.h).
#include "berth/kubesched/group_topology.h"

#include <cstdint>

namespace berth::kube {
namespace {

using nlohmann::json;

std::string Shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 64 ? s.substr(0, 64) + "..." : s;
}

Status ParseKnobs(const std::string& where, const json& topo, TopologyKnobs& out) {
  if (!topo.is_object()) return InvalidArgument(where + ": expected an object, found " + Shown(topo));
  for (const auto& [key, val] : topo.items()) {
    const std::string k = where + "." + key.substr(0, 64);
    if (key == "required" || key == "preferred" || key == "blockLevel") {
      if (!val.is_string()) return InvalidArgument(k + ": expected a level name, found " + Shown(val));
      BERTH_ASSIGN_OR_RETURN(std::optional<cluster::Level> level, ParseLevelText(k, val.get<std::string>()));
      if (!level) continue;
      if (key == "required") out.required = level;
      else if (key == "preferred") out.preferred = level;
      else out.block_level = *level;
    } else if (key == "blockTasks") {
      if (!val.is_number_integer() || val.get<int64_t>() < 0 || val.get<int64_t>() > INT32_MAX)
        return InvalidArgument(k + ": expected a non-negative integer, found " + Shown(val));
      out.block_tasks = static_cast<int32_t>(val.get<int64_t>());
    } else {
      return InvalidArgument("unknown field '" + k + "' (required, preferred, blockTasks, blockLevel)");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::optional<cluster::Level>> ParseLevelText(const std::string& where, const std::string& text) {
  if (text.empty()) return std::optional<cluster::Level>();
  auto level = cluster::ParseLevel(text);
  if (!level)
    return InvalidArgument(where + ": '" + text.substr(0, 64) + "' is not a level (region, cluster, spine, leaf, nvlink)");
  return level;
}

StatusOr<PodGroupTopology> ParsePodGroupTopology(const json& spec) {
  PodGroupTopology t;
  if (!spec.is_object()) return t;
  if (auto it = spec.find("topology"); it != spec.end() && !it->is_null())
    BERTH_RETURN_IF_ERROR(ParseKnobs("spec.topology", *it, t.gang));
  auto subs = spec.find("subGroups");
  if (subs == spec.end() || subs->is_null()) return t;
  if (!subs->is_array()) return InvalidArgument("spec.subGroups: expected a list, found " + Shown(*subs));
  for (size_t i = 0; i < subs->size(); ++i) {
    const json& s = (*subs)[i];
    const std::string at = "spec.subGroups[" + std::to_string(i) + "]";
    if (!s.is_object()) return InvalidArgument(at + ": expected an object, found " + Shown(s));
    auto name = s.find("name");
    if (name == s.end() || !name->is_string() || name->get<std::string>().empty())
      return InvalidArgument(at + ".name: missing (the value of the pods' berth.dev/subgroup label)");
    const std::string n = name->get<std::string>();
    if (t.subgroups.count(n)) return InvalidArgument(at + ".name: '" + n.substr(0, 64) + "' given twice");
    TopologyKnobs k;
    for (const auto& [key, val] : s.items()) {
      if (key == "topology") {
        BERTH_RETURN_IF_ERROR(ParseKnobs(at + ".topology", val, k));
      } else if (key != "name" && key != "minMember") {  // KAI's per-subgroup minimum: the gang's counts it
        return InvalidArgument("unknown field '" + at + "." + key.substr(0, 64) + "' (name, minMember, topology)");
      }
    }
    t.subgroups.emplace(n, k);
  }
  return t;
}

void ApplyPodGroupTopology(const PodGroupTopology& t, const std::vector<std::string>& subgroup_of_group,
                           job::JobSpec& spec) {
  if (t.gang.required) spec.required_level = t.gang.required;
  if (t.gang.preferred) spec.preferred_level = t.gang.preferred;
  for (size_t i = 0; i < spec.groups.size(); ++i) {
    job::TaskGroup& g = spec.groups[i];
    const TopologyKnobs* own = nullptr;
    if (i < subgroup_of_group.size() && !subgroup_of_group[i].empty()) {
      auto it = t.subgroups.find(subgroup_of_group[i]);
      if (it != t.subgroups.end()) own = &it->second;
    }
    if (own) {
      g.required_level = own->required;
      g.preferred_level = own->preferred;
    }
    const TopologyKnobs& blocks = own && own->block_tasks > 0 ? *own : t.gang;
    if (blocks.block_tasks > 0 && g.gpus >= 1 && g.milli_per_gpu == kMilliPerGpu) {
      g.block_tasks = blocks.block_tasks;
      g.block_level = blocks.block_level;
    }
  }
}

}  // namespace berth::kube
