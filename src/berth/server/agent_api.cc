// Strict parsing of the node API's documents.
#include "berth/server/agent_api.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "berth/common/identifier.h"
#include "berth/json/json_parse.h"
#include "berth/json/json_values.h"

namespace berth::server {
namespace {

using nlohmann::json;

constexpr size_t kMaxText = 256;

using berth::json::Shown;

Status GetName(const std::string& key, const json& v, std::string& out, bool allow_empty = false) {
  if (!v.is_string()) return InvalidArgument(key + ": expected a string, found " + Shown(v));
  const auto& text = v.get_ref<const std::string&>();
  if (text.size() > kMaxText) return InvalidArgument(key + ": longer than " + std::to_string(kMaxText) + " bytes");
  if (text.empty() && !allow_empty) return InvalidArgument(key + ": empty");
  BERTH_RETURN_IF_ERROR(CheckIdentifier(key, text));
  for (char c : text)
    if (c == ' ' || c == '/' || c == '\t')
      return InvalidArgument(key + ": '" + text + "' may not hold spaces or slashes");
  out = text;
  return Status::Ok();
}

using berth::json::GetInt;
using berth::json::GetIntAs;

StatusOr<json> Object(const std::string& body) {
  BERTH_ASSIGN_OR_RETURN(json v, berth::json::ParseUntrusted(body));
  if (!v.is_object()) return InvalidArgument("expected a JSON object, found " + Shown(v));
  return v;
}

// The "name" and "agent_id" every document carries.
Status Identity(const json& v, std::string& name, std::string& agent_id) {
  if (!v.contains("name")) return InvalidArgument("name: missing (the node's name)");
  if (!v.contains("agent_id")) return InvalidArgument("agent_id: missing (the agent's identity)");
  BERTH_RETURN_IF_ERROR(GetName("name", v.at("name"), name));
  return GetName("agent_id", v.at("agent_id"), agent_id);
}

constexpr int64_t kI32 = std::numeric_limits<int32_t>::max();
constexpr int64_t kI64 = std::numeric_limits<int64_t>::max();

Status ParseReport(const std::string& where, const json& v, bool status_doc, AgentTaskReport& r) {
  if (!v.is_object()) return InvalidArgument(where + ": expected an object, found " + Shown(v));
  bool has_job = false, has_task = false, has_gen = false, has_state = false, has_code = false;
  for (const auto& [key, val] : v.items()) {
    const std::string k = where.empty() ? key : where + "." + key;
    if (key == "job") {
      BERTH_RETURN_IF_ERROR(GetInt(k, val, 0, kI64, r.job));
      has_job = true;
    } else if (key == "generation") {
      BERTH_RETURN_IF_ERROR(GetIntAs(k, val, 1, kI32, r.generation));
      has_gen = true;
    } else if (key == "task") {
      BERTH_RETURN_IF_ERROR(GetIntAs(k, val, 0, kI32, r.task));
      has_task = true;
    } else if (key == "attempt") {
      BERTH_RETURN_IF_ERROR(GetIntAs(k, val, 0, kI32, r.attempt));
    } else if (key == "state") {
      if (!val.is_string()) return InvalidArgument(k + ": expected running, exited or lost, found " + Shown(val));
      const std::string s = val.get<std::string>();
      if (s == "running") {
        r.state = AgentTaskReport::State::kRunning;
      } else if (s == "exited") {
        r.state = AgentTaskReport::State::kExited;
      } else if (s == "lost") {
        r.state = AgentTaskReport::State::kLost;
      } else {
        return InvalidArgument(k + ": expected running, exited or lost, found " + Shown(val));
      }
      has_state = true;
    } else if (key == "exit_code") {
      BERTH_RETURN_IF_ERROR(GetIntAs(k, val, 0, 255, r.exit_code));
      has_code = true;
    } else if (status_doc && (key == "name" || key == "agent_id")) {
      continue;
    } else {
      return InvalidArgument("unknown field '" + berth::json::ExcerptText(k, 60) + "'");
    }
  }
  const std::string at = where.empty() ? "" : where + ".";
  if (!has_job) return InvalidArgument(at + "job: missing");
  if (!has_gen) return InvalidArgument(at + "generation: missing");
  if (!has_task) return InvalidArgument(at + "task: missing");
  if (!has_state) return InvalidArgument(at + "state: missing");
  if (r.state == AgentTaskReport::State::kExited && !has_code) return InvalidArgument(at + "exit_code: missing");
  if (r.state != AgentTaskReport::State::kExited && has_code)
    return InvalidArgument(at + "exit_code: only for state exited");
  return Status::Ok();
}

}  // namespace

cluster::NodeSpec AgentRegistration::ToNodeSpec() const {
  cluster::NodeSpec s;
  s.name = name;
  s.cpu_milli = cpu_milli;
  s.memory_mib = memory_mib;
  s.gpu_count = static_cast<int32_t>(gpus.size());
  if (!gpus.empty()) {
    s.gpu_type = gpus[0].type;
    s.gpu_memory_mib = gpus[0].memory_mib;
  }
  s.region = region;
  s.cluster = cluster;
  s.spine = spine;
  s.leaf = leaf;
  s.nvlink = nvlink;
  return s;
}

StatusOr<AgentRegistration> ParseAgentRegistration(const std::string& body) {
  BERTH_ASSIGN_OR_RETURN(json v, Object(body));
  AgentRegistration r;
  BERTH_RETURN_IF_ERROR(Identity(v, r.name, r.agent_id));
  for (const auto& [key, val] : v.items()) {
    if (key == "name" || key == "agent_id") continue;
    if (key == "cpu_milli") {
      BERTH_RETURN_IF_ERROR(GetInt(key, val, 0, int64_t{1} << 40, r.cpu_milli));
    } else if (key == "memory_mib") {
      BERTH_RETURN_IF_ERROR(GetInt(key, val, 0, int64_t{1} << 40, r.memory_mib));
    } else if (key == "gpus") {
      if (!val.is_array()) return InvalidArgument("gpus: expected an array, found " + Shown(val));
      if (val.size() > kMaxAgentGpus)
        return InvalidArgument("gpus: more than " + std::to_string(kMaxAgentGpus) + " GPUs on one node");
      std::set<int32_t> seen;
      for (size_t i = 0; i < val.size(); ++i) {
        const std::string w = "gpus[" + std::to_string(i) + "]";
        const json& g = val[i];
        if (!g.is_object()) return InvalidArgument(w + ": expected an object, found " + Shown(g));
        AgentGpu gpu;
        bool has_index = false, has_type = false;
        for (const auto& [gk, gv] : g.items()) {
          if (gk == "index") {
            BERTH_RETURN_IF_ERROR(GetIntAs(w + ".index", gv, 0, 1023, gpu.index));
            has_index = true;
          } else if (gk == "type") {
            BERTH_RETURN_IF_ERROR(GetName(w + ".type", gv, gpu.type));
            has_type = true;
          } else if (gk == "memory_mib") {
            BERTH_RETURN_IF_ERROR(GetInt(w + ".memory_mib", gv, 0, int64_t{1} << 30, gpu.memory_mib));
          } else {
            return InvalidArgument("unknown field '" + w + "." + berth::json::ExcerptText(gk, 60) + "'");
          }
        }
        if (!has_index) return InvalidArgument(w + ".index: missing");
        if (!has_type) return InvalidArgument(w + ".type: missing");
        if (!seen.insert(gpu.index).second)
          return InvalidArgument(w + ".index: " + std::to_string(gpu.index) + " appears twice");
        if (!r.gpus.empty() && gpu.type != r.gpus[0].type)
          return InvalidArgument(w + ".type: '" + gpu.type + "' differs from gpus[0].type '" + r.gpus[0].type +
                                 "' (a node has GPUs of one type)");
        r.gpus.push_back(std::move(gpu));
      }
    } else if (key == "address") {
      BERTH_RETURN_IF_ERROR(GetName("address", val, r.address, true));
    } else if (key == "labels") {
      if (!val.is_object()) return InvalidArgument("labels: expected an object, found " + Shown(val));
      for (const auto& [lk, lv] : val.items()) {
        std::string* out = lk == "region"    ? &r.region
                           : lk == "cluster" ? &r.cluster
                           : lk == "spine"   ? &r.spine
                           : lk == "leaf"    ? &r.leaf
                           : lk == "nvlink"  ? &r.nvlink
                                             : nullptr;
        if (!out)
          return InvalidArgument("labels." + berth::json::ExcerptText(lk, 60) +
                                 ": not a topology level (region, cluster, spine, leaf, nvlink)");
        BERTH_RETURN_IF_ERROR(GetName("labels." + lk, lv, *out, true));
      }
    } else {
      return InvalidArgument("unknown field '" + berth::json::ExcerptText(key, 60) + "'");
    }
  }
  return r;
}

StatusOr<AgentHeartbeat> ParseAgentHeartbeat(const std::string& body) {
  BERTH_ASSIGN_OR_RETURN(json v, Object(body));
  AgentHeartbeat h;
  BERTH_RETURN_IF_ERROR(Identity(v, h.name, h.agent_id));
  for (const auto& [key, val] : v.items()) {
    if (key == "name" || key == "agent_id") continue;
    if (key == "failed_gpus") {
      if (!val.is_array()) return InvalidArgument("failed_gpus: expected an array of GPU indexes, found " + Shown(val));
      if (val.size() > kMaxAgentGpus)
        return InvalidArgument("failed_gpus: more than " + std::to_string(kMaxAgentGpus) + " GPUs");
      std::set<int32_t> seen;
      for (size_t i = 0; i < val.size(); ++i) {
        int32_t g = 0;
        BERTH_RETURN_IF_ERROR(GetIntAs("failed_gpus[" + std::to_string(i) + "]", val[i], 0, kI32, g));
        if (!seen.insert(g).second)
          return InvalidArgument("failed_gpus[" + std::to_string(i) + "]: GPU " + std::to_string(g) + " listed twice");
        h.failed_gpus.push_back(g);
      }
      continue;
    }
    if (key != "tasks") return InvalidArgument("unknown field '" + berth::json::ExcerptText(key, 60) + "'");
    if (!val.is_array()) return InvalidArgument("tasks: expected an array, found " + Shown(val));
    if (val.size() > kMaxAgentTasks)
      return InvalidArgument("tasks: more than " + std::to_string(kMaxAgentTasks) + " tasks");
    for (size_t i = 0; i < val.size(); ++i) {
      AgentTaskReport r;
      BERTH_RETURN_IF_ERROR(ParseReport("tasks[" + std::to_string(i) + "]", val[i], false, r));
      h.tasks.push_back(r);
    }
  }
  return h;
}

StatusOr<AgentStatus> ParseAgentStatus(const std::string& body) {
  BERTH_ASSIGN_OR_RETURN(json v, Object(body));
  AgentStatus s;
  BERTH_RETURN_IF_ERROR(Identity(v, s.name, s.agent_id));
  BERTH_RETURN_IF_ERROR(ParseReport("", v, true, s.report));
  if (s.report.state == AgentTaskReport::State::kRunning)
    return InvalidArgument("state: a status report is exited or lost (running tasks go in heartbeats)");
  return s;
}

std::string EncodeAgentRegistration(const AgentRegistration& r) {
  json gpus = json::array();
  for (const auto& g : r.gpus) gpus.push_back({{"index", g.index}, {"type", g.type}, {"memory_mib", g.memory_mib}});
  json labels = json::object();
  for (const auto& [k, v] : {std::pair<const char*, const std::string*>{"region", &r.region},
                             {"cluster", &r.cluster},
                             {"spine", &r.spine},
                             {"leaf", &r.leaf},
                             {"nvlink", &r.nvlink}})
    if (!v->empty()) labels[k] = *v;
  json doc = {{"name", r.name},           {"agent_id", r.agent_id}, {"cpu_milli", r.cpu_milli},
              {"memory_mib", r.memory_mib}, {"gpus", gpus},           {"labels", labels}};
  if (!r.address.empty()) doc["address"] = r.address;
  return doc.dump();
}

}  // namespace berth::server
