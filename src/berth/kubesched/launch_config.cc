// The launch ConfigMap of a gang: its name and its object.
#include "berth/kubesched/launch_config.h"

#include "berth/common/hash.h"
#include "berth/server/launch_json.h"

namespace berth::kube {

using nlohmann::json;

namespace {

std::string Hex16(const std::string& text) {
  StableHash h;
  h.Add(text);
  return h.Hex();
}

bool Alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

}  // namespace

std::string LaunchConfigMapName(const std::string& group) {
  const size_t slash = group.find('/');
  const std::string name = slash == std::string::npos ? group : group.substr(slash + 1);
  std::string clean;
  for (char c : name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    clean += (Alnum(c) || c == '-' || c == '.') ? c : '-';
  }
  const std::string prefix = "berth-launch-";
  constexpr size_t kMax = 253;
  const bool changed = clean != name || clean.empty() || !Alnum(clean.back());
  if (!changed && prefix.size() + clean.size() <= kMax) return prefix + clean;
  const std::string suffix = "-" + Hex16(name);
  clean = clean.substr(0, kMax - prefix.size() - suffix.size());
  while (!clean.empty() && !Alnum(clean.back())) clean.pop_back();
  return prefix + clean + (clean.empty() ? suffix.substr(1) : suffix);
}

json LaunchConfigMap(const std::string& ns, const std::string& group, int64_t job, const workload::LaunchSpec& spec,
                     const std::vector<LaunchPod>& pods) {
  json data = json::object();
  size_t bytes = 0;
  std::vector<std::string> omitted;
  // Adds a kind of entries whole, or names it as left out.
  auto add = [&](const char* kind, const std::vector<std::pair<std::string, std::string>>& entries) {
    size_t more = 0;
    for (const auto& [k, v] : entries) more += k.size() + v.size();
    if (bytes + more > kMaxLaunchConfigBytes) {
      omitted.push_back(kind);
      return;
    }
    bytes += more;
    for (const auto& [k, v] : entries) data[k] = v;
  };
  std::string ring, ranks;
  for (size_t i = 0; i < spec.nccl_ring.size(); ++i) ring += (i ? " " : "") + std::to_string(spec.nccl_ring[i]);
  for (const auto& t : spec.tasks) {
    const std::string pod = t.task >= 0 && t.task < static_cast<int32_t>(pods.size()) ? pods[t.task].name : "";
    ranks += std::to_string(t.rank) + " " + pod + " " + t.node + "\n";
  }
  add("summary", {{"world-size", std::to_string(spec.world_size)},
                  {"master", spec.master_addr + ":" + std::to_string(spec.master_port)},
                  {"launcher", job::LauncherName(spec.launcher)},
                  {"hostfile", spec.mpi_hostfile},
                  {"ring", ring},
                  {"pods", ranks}});
  std::vector<std::pair<std::string, std::string>> env, tf, topo;
  for (const auto& t : spec.tasks) {
    std::string lines;
    for (const auto& [k, v] : t.env) lines += k + "=" + v + "\n";
    env.emplace_back("rank-" + std::to_string(t.rank) + ".env", std::move(lines));
    if (auto it = t.env.find("TF_CONFIG"); it != t.env.end())
      tf.emplace_back("rank-" + std::to_string(t.rank) + ".tf-config", it->second);
  }
  for (const auto& n : spec.nodes)
    if (!n.nccl_topology_xml.empty()) topo.emplace_back("nccl-topo-" + n.node + ".xml", n.nccl_topology_xml);
  add("env", env);
  if (!tf.empty()) add("tf-config", tf);
  add("nccl-topo", topo);
  add("launch.json", {{"launch.json", server::LaunchSpecJson(spec).dump()}});

  json owners = json::array();
  for (const auto& p : pods)
    if (!p.uid.empty())
      owners.push_back({{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", p.name}, {"uid", p.uid}});
  json annotations = {{"berth.dev/pod-group", group}, {"berth.dev/job", std::to_string(job)}};
  if (!omitted.empty()) {
    std::string list;
    for (const auto& o : omitted) list += (list.empty() ? "" : ",") + o;
    annotations["berth.dev/launch-omitted"] = list;
  }
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", LaunchConfigMapName(group)},
            {"namespace", ns},
            {"labels", {{"app.kubernetes.io/managed-by", "berth"}}},
            {"annotations", std::move(annotations)},
            {"ownerReferences", std::move(owners)}}},
          {"data", std::move(data)}};
}

}  // namespace berth::kube
