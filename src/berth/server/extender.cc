// Extender documents: parsing and rendering.
#include "berth/server/extender.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <span>
#include <utility>

#include "berth/common/identifier.h"
#include "berth/json/json_parse.h"

namespace berth::server::k8s {

using nlohmann::json;

namespace {

bool IEquals(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// The member `key` of object `v` (exact match first, then case-insensitive, as
// Go's encoding/json), or nullptr. JSON null counts as absent.
const json* Member(const json& v, const std::string& key) {
  if (!v.is_object()) return nullptr;
  auto it = v.find(key);
  if (it != v.end()) return it->is_null() ? nullptr : &*it;
  for (auto i = v.begin(); i != v.end(); ++i)
    if (IEquals(i.key(), key)) return i->is_null() ? nullptr : &*i;
  return nullptr;
}

Status GetString(const json& v, const std::string& key, const std::string& where, std::string& out) {
  const json* m = Member(v, key);
  if (!m) return Status::Ok();
  if (!m->is_string()) return InvalidArgument(where + key + ": expected a string");
  out = m->get<std::string>();
  return Status::Ok();
}

// A Kubernetes identifier Berth keys its bookkeeping and logs by.
Status CheckName(const std::string& where, const std::string& s) {
  if (s.size() > kMaxK8sName)
    return InvalidArgument(where + ": " + std::to_string(s.size()) + " bytes is longer than " +
                           std::to_string(kMaxK8sName));
  return CheckIdentifier(where, s);
}

Status GetStringMap(const json& v, const std::string& key, const std::string& where,
                    std::map<std::string, std::string>& out) {
  const json* m = Member(v, key);
  if (!m) return Status::Ok();
  if (!m->is_object()) return InvalidArgument(where + key + ": expected an object of strings");
  for (const auto& [k, val] : m->items()) {
    if (!val.is_string())
      return InvalidArgument(where + key + "." + (k.size() <= 64 ? k : berth::json::ExcerptText(k, 60)) +
                             ": expected a string");
    out[k] = val.get<std::string>();
  }
  return Status::Ok();
}

// An integer in lo..hi, checked before it is narrowed.
Status GetInt(const json& v, const std::string& key, const std::string& where, int64_t& out,
              int64_t lo = std::numeric_limits<int64_t>::min(), int64_t hi = std::numeric_limits<int64_t>::max()) {
  const json* m = Member(v, key);
  if (!m) return Status::Ok();
  if (!m->is_number_integer())
    return InvalidArgument(where + key + ": expected an integer, found " + berth::json::Excerpt(*m));
  const bool too_big = m->is_number_unsigned() && m->get<uint64_t>() > static_cast<uint64_t>(hi < 0 ? 0 : hi);
  const int64_t x = too_big ? 0 : m->get<int64_t>();
  if (too_big || x < lo || x > hi)
    return InvalidArgument(where + key + ": " + berth::json::Excerpt(*m) + " is outside " + std::to_string(lo) +
                           ".." + std::to_string(hi));
  out = x;
  return Status::Ok();
}

// Sums one resource over the containers' requests or limits.
Status SumResource(const json& containers, const char* section, const std::string& resource, int64_t scale,
                   int64_t& out, bool& seen) {
  for (size_t i = 0; i < containers.size(); ++i) {
    const std::string where = "pod.spec.containers[" + std::to_string(i) + "].resources." + section + ".";
    const json* res = Member(containers[i], "resources");
    const json* sec = res ? Member(*res, section) : nullptr;
    const json* q = sec ? Member(*sec, resource) : nullptr;
    if (!q) continue;
    std::string text;
    if (q->is_string()) {
      text = q->get<std::string>();
    } else if (q->is_number()) {
      text = q->dump();
    } else {
      return InvalidArgument(where + resource + ": expected a quantity, found " + berth::json::Excerpt(*q));
    }
    StatusOr<int64_t> n = ParseQuantity(text, scale);
    if (!n.ok()) return InvalidArgument(where + resource + ": " + n.status().message());
    if (*n > std::numeric_limits<int64_t>::max() - out)
      return InvalidArgument(where + resource + ": the sum over containers overflows");
    out += *n;
    seen = true;
  }
  return Status::Ok();
}

json MetaVictimsJson(const MetaVictims& m) {
  json pods = json::array();
  for (const auto& uid : m.pod_uids) pods.push_back({{"uid", uid}});
  return {{"pods", pods}, {"numPDBViolations", m.num_pdb_violations}};
}

StatusOr<std::map<std::string, MetaVictims>> ParseVictimsMap(const json& v, const std::string& where, bool meta) {
  std::map<std::string, MetaVictims> out;
  if (!v.is_object()) return InvalidArgument(where + ": expected an object keyed by node name");
  for (const auto& [node, victims] : v.items()) {
    const std::string w = where + "." + (node.size() <= 64 ? node : berth::json::ExcerptText(node, 60));
    if (victims.is_null()) {
      out[node];
      continue;
    }
    if (!victims.is_object()) return InvalidArgument(w + ": expected an object");
    MetaVictims m;
    BERTH_RETURN_IF_ERROR(GetInt(victims, "numPDBViolations", w + ".", m.num_pdb_violations, 0));
    if (const json* pods = Member(victims, "pods")) {
      if (!pods->is_array()) return InvalidArgument(w + ".pods: expected an array");
      for (size_t i = 0; i < pods->size(); ++i) {
        const json& p = (*pods)[i];
        const std::string wp = w + ".pods[" + std::to_string(i) + "]";
        std::string uid;
        if (meta) {
          BERTH_RETURN_IF_ERROR(GetString(p, "uid", wp + ".", uid));
        } else {
          const json* md = Member(p, "metadata");
          if (md) BERTH_RETURN_IF_ERROR(GetString(*md, "uid", wp + ".metadata.", uid));
        }
        m.pod_uids.push_back(uid);
      }
    }
    out[node] = std::move(m);
  }
  return out;
}

}  // namespace

namespace {
// Where a group's name is read, in order: (annotation?, key).
constexpr std::pair<bool, const char*> kGroupKeys[] = {{true, "scheduling.k8s.io/group-name"},
                                                       {false, "scheduling.x-k8s.io/pod-group"},
                                                       {false, "pod-group.scheduling.sigs.k8s.io"},
                                                       {false, "kueue.x-k8s.io/pod-group-name"},
                                                       {true, "pod-group-name"}};
constexpr std::pair<bool, const char*> kOtherKeys[] = {{true, "berth.dev/min-member"},
                                                       {true, "kueue.x-k8s.io/pod-group-total-count"},
                                                       {false, "pod-group.scheduling.sigs.k8s.io/min-available"},
                                                       {false, "kueue.x-k8s.io/queue-name"},
                                                       {false, "kai.scheduler/queue"},
                                                       {true, "scheduling.volcano.sh/queue-name"},
                                                       {true, "berth.dev/gpu-memory-mib"},
                                                       // Service replicas (pod_service.h).
                                                       {false, "berth.dev/service"},
                                                       {false, "pod-template-hash"},
                                                       {true, "berth.dev/min-replicas"},
                                                       {true, "berth.dev/latency-class"},
                                                       {true, "berth.dev/max-per-node"},
                                                       {true, "berth.dev/best-effort"}};
}  // namespace

std::string Pod::group_key() const {
  for (const auto& [annotation, key] : kGroupKeys) {
    const auto& m = annotation ? annotations : labels;
    auto it = m.find(key);
    if (it != m.end() && !it->second.empty()) return key;
  }
  return "";
}

std::string Pod::group_name() const {
  for (const auto& [annotation, key] : kGroupKeys) {
    const auto& m = annotation ? annotations : labels;
    auto it = m.find(key);
    if (it != m.end() && !it->second.empty()) return it->second;
  }
  return "";
}

void Pod::KeepSchedulingMetadata() {
  std::map<std::string, std::string> keep_labels, keep_annotations;
  auto keep = [&](std::span<const std::pair<bool, const char*>> keys) {
    for (const auto& [annotation, key] : keys) {
      const auto& from = annotation ? annotations : labels;
      auto it = from.find(key);
      if (it != from.end()) (annotation ? keep_annotations : keep_labels)[key] = it->second;
    }
  };
  keep(kGroupKeys);
  keep(kOtherKeys);
  labels = std::move(keep_labels);
  annotations = std::move(keep_annotations);
}

int32_t Pod::min_member() const {
  auto get = [](const std::map<std::string, std::string>& m, const char* k) -> int32_t {
    auto it = m.find(k);
    if (it == m.end()) return 0;
    char* end = nullptr;
    long v = std::strtol(it->second.c_str(), &end, 10);
    return (end && *end == 0 && v > 0 && v <= 100000) ? static_cast<int32_t>(v) : 0;
  };
  for (int32_t v : {get(annotations, "berth.dev/min-member"), get(annotations, "kueue.x-k8s.io/pod-group-total-count"),
                    get(labels, "pod-group.scheduling.sigs.k8s.io/min-available")})
    if (v > 0) return v;
  return 1;
}

std::string Pod::queue() const {
  for (const auto& [m, k] : {std::pair{&labels, "kueue.x-k8s.io/queue-name"}, std::pair{&labels, "kai.scheduler/queue"},
                             std::pair{&annotations, "scheduling.volcano.sh/queue-name"}}) {
    auto it = m->find(k);
    if (it != m->end() && !it->second.empty()) return it->second;
  }
  return ns;
}

StatusOr<MiB> Pod::gpu_memory_mib() const {
  auto it = annotations.find("berth.dev/gpu-memory-mib");
  if (it == annotations.end()) return MiB{0};
  const std::string& text = it->second;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < 0)
    return InvalidArgument("annotation berth.dev/gpu-memory-mib: expected a non-negative integer (MiB), found '" +
                           text.substr(0, 64) + "'");
  return MiB{v};
}

StatusOr<Pod> ParsePod(const json& v) {
  if (!v.is_object()) return InvalidArgument("pod: expected an object (a v1.Pod)");
  Pod p;
  if (const json* md = Member(v, "metadata")) {
    if (!md->is_object()) return InvalidArgument("pod.metadata: expected an object");
    BERTH_RETURN_IF_ERROR(GetString(*md, "name", "pod.metadata.", p.name));
    BERTH_RETURN_IF_ERROR(GetString(*md, "namespace", "pod.metadata.", p.ns));
    BERTH_RETURN_IF_ERROR(GetString(*md, "uid", "pod.metadata.", p.uid));
    BERTH_RETURN_IF_ERROR(GetStringMap(*md, "labels", "pod.metadata.", p.labels));
    BERTH_RETURN_IF_ERROR(GetStringMap(*md, "annotations", "pod.metadata.", p.annotations));
    // The owner: the reference marked controller, else the first one.
    if (const json* refs = Member(*md, "ownerReferences")) {
      if (!refs->is_array()) return InvalidArgument("pod.metadata.ownerReferences: expected an array");
      for (size_t i = 0; i < refs->size(); ++i) {
        const json& r = (*refs)[i];
        const std::string where = "pod.metadata.ownerReferences[" + std::to_string(i) + "].";
        if (!r.is_object()) return InvalidArgument(where.substr(0, where.size() - 1) + ": expected an object");
        std::string kind, name;
        BERTH_RETURN_IF_ERROR(GetString(r, "kind", where, kind));
        BERTH_RETURN_IF_ERROR(GetString(r, "name", where, name));
        BERTH_RETURN_IF_ERROR(CheckName(where + "kind", kind));
        BERTH_RETURN_IF_ERROR(CheckName(where + "name", name));
        const json* controller = Member(r, "controller");
        const bool is_controller = controller && controller->is_boolean() && controller->get<bool>();
        if (p.owner_kind.empty() || is_controller) {
          p.owner_kind = kind;
          p.owner_name = name;
        }
        if (is_controller) break;
      }
    }
  }
  if (p.name.empty()) return InvalidArgument("pod.metadata.name: missing");
  if (p.ns.empty()) p.ns = "default";
  BERTH_RETURN_IF_ERROR(CheckName("pod.metadata.name", p.name));
  BERTH_RETURN_IF_ERROR(CheckName("pod.metadata.namespace", p.ns));
  BERTH_RETURN_IF_ERROR(CheckName("pod.metadata.uid", p.uid));
  if (p.uid.empty()) p.uid = p.ns + "/" + p.name;
  BERTH_RETURN_IF_ERROR(CheckName("pod group name", p.group_name()));
  BERTH_RETURN_IF_ERROR(CheckName("pod queue name", p.queue()));
  if (const json* spec = Member(v, "spec")) {
    if (!spec->is_object()) return InvalidArgument("pod.spec: expected an object");
    int64_t prio = 0;
    BERTH_RETURN_IF_ERROR(GetInt(*spec, "priority", "pod.spec.", prio, std::numeric_limits<int32_t>::min(),
                                 std::numeric_limits<int32_t>::max()));
    p.priority = static_cast<int32_t>(prio);
    if (const json* cs = Member(*spec, "containers")) {
      if (!cs->is_array()) return InvalidArgument("pod.spec.containers: expected an array");
      int64_t cpu = 0, mem = 0, gpu_limits = 0, gpu_requests = 0;
      bool seen = false, gpu_limit_seen = false;
      BERTH_RETURN_IF_ERROR(SumResource(*cs, "requests", "cpu", 1000, cpu, seen));
      BERTH_RETURN_IF_ERROR(SumResource(*cs, "requests", "memory", 1, mem, seen));
      BERTH_RETURN_IF_ERROR(SumResource(*cs, "limits", "nvidia.com/gpu", 1, gpu_limits, gpu_limit_seen));
      BERTH_RETURN_IF_ERROR(SumResource(*cs, "requests", "nvidia.com/gpu", 1, gpu_requests, seen));
      const int64_t gpus = gpu_limit_seen ? gpu_limits : gpu_requests;
      if (mem > std::numeric_limits<int64_t>::max() - ((1 << 20) - 1))
        return InvalidArgument("pod.spec.containers: requests.memory is too large");
      p.cpu_milli = cpu;
      p.memory_mib = (mem + (1 << 20) - 1) >> 20;
      if (gpus > 64) return InvalidArgument("pod.spec.containers: nvidia.com/gpu " + std::to_string(gpus) + " is above 64");
      p.gpus = static_cast<int32_t>(gpus);
    }
  }
  return p;
}

std::vector<std::string> ExtenderArgs::CandidateNames() const {
  if (node_names) return *node_names;
  std::vector<std::string> out;
  if (nodes) {
    if (const json* items = Member(*nodes, "items"); items && items->is_array())
      for (const auto& n : *items) {
        const json* md = Member(n, "metadata");
        const json* name = md ? Member(*md, "name") : nullptr;
        out.push_back(name && name->is_string() ? name->get<std::string>() : "");
      }
  }
  return out;
}

StatusOr<ExtenderArgs> ParseExtenderArgs(json doc) {
  if (!doc.is_object()) return InvalidArgument("expected an ExtenderArgs object");
  ExtenderArgs a;
  a.doc = std::make_shared<const json>(std::move(doc));
  const json& v = *a.doc;
  const json* pod = Member(v, "pod");
  if (!pod) return InvalidArgument("pod: missing");
  BERTH_ASSIGN_OR_RETURN(a.pod, ParsePod(*pod));
  if (const json* nodes = Member(v, "nodes")) {
    if (!nodes->is_object()) return InvalidArgument("nodes: expected a v1.NodeList object");
    const json* items = Member(*nodes, "items");
    if (items && !items->is_array()) return InvalidArgument("nodes.items: expected an array");
    a.nodes = nodes;
  }
  if (const json* names = Member(v, "nodenames")) {
    if (!names->is_array()) return InvalidArgument("nodenames: expected an array of strings");
    std::vector<std::string> list;
    for (size_t i = 0; i < names->size(); ++i) {
      if (!(*names)[i].is_string()) return InvalidArgument("nodenames[" + std::to_string(i) + "]: expected a string");
      list.push_back((*names)[i].get<std::string>());
    }
    a.node_names = std::move(list);
  }
  if (!a.nodes && !a.node_names) return InvalidArgument("nodes or nodenames: one is needed");
  return a;
}

json ToJson(const FilterResult& r) {
  json j = json::object();
  if (r.nodes) j["nodes"] = *r.nodes;
  if (r.node_names) j["nodenames"] = *r.node_names;
  if (!r.failed_nodes.empty()) j["failedNodes"] = r.failed_nodes;
  if (!r.failed_and_unresolvable.empty()) j["failedAndUnresolvableNodes"] = r.failed_and_unresolvable;
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

StatusOr<FilterResult> ParseFilterResult(const json& v) {
  if (!v.is_object()) return InvalidArgument("expected an ExtenderFilterResult object");
  FilterResult r;
  if (const json* n = Member(v, "nodes")) r.nodes = *n;
  if (const json* n = Member(v, "nodenames")) {
    if (!n->is_array()) return InvalidArgument("nodenames: expected an array");
    std::vector<std::string> names;
    for (size_t i = 0; i < n->size(); ++i) {
      if (!(*n)[i].is_string()) return InvalidArgument("nodenames[" + std::to_string(i) + "]: expected a string");
      names.push_back((*n)[i].get<std::string>());
    }
    r.node_names = std::move(names);
  }
  BERTH_RETURN_IF_ERROR(GetStringMap(v, "failedNodes", "", r.failed_nodes));
  BERTH_RETURN_IF_ERROR(GetStringMap(v, "failedAndUnresolvableNodes", "", r.failed_and_unresolvable));
  BERTH_RETURN_IF_ERROR(GetString(v, "error", "", r.error));
  return r;
}

json ToJson(const std::vector<HostPriority>& list) {
  json a = json::array();
  for (const auto& h : list) a.push_back({{"host", h.host}, {"score", h.score}});
  return a;
}

StatusOr<std::vector<HostPriority>> ParseHostPriorityList(const json& v) {
  if (!v.is_array()) return InvalidArgument("expected a HostPriorityList array");
  std::vector<HostPriority> out;
  for (size_t i = 0; i < v.size(); ++i) {
    HostPriority h;
    const std::string w = "[" + std::to_string(i) + "].";
    BERTH_RETURN_IF_ERROR(GetString(v[i], "host", w, h.host));
    BERTH_RETURN_IF_ERROR(GetInt(v[i], "score", w, h.score));
    out.push_back(h);
  }
  return out;
}

json ToJson(const BindingArgs& a) {
  return {{"PodName", a.pod_name}, {"PodNamespace", a.pod_namespace}, {"PodUID", a.pod_uid}, {"Node", a.node}};
}

StatusOr<BindingArgs> ParseBindingArgs(const json& v) {
  if (!v.is_object()) return InvalidArgument("expected an ExtenderBindingArgs object");
  BindingArgs a;
  BERTH_RETURN_IF_ERROR(GetString(v, "PodName", "", a.pod_name));
  BERTH_RETURN_IF_ERROR(GetString(v, "PodNamespace", "", a.pod_namespace));
  BERTH_RETURN_IF_ERROR(GetString(v, "PodUID", "", a.pod_uid));
  BERTH_RETURN_IF_ERROR(GetString(v, "Node", "", a.node));
  if (a.pod_name.empty()) return InvalidArgument("PodName: missing");
  if (a.node.empty()) return InvalidArgument("Node: missing");
  if (a.pod_namespace.empty()) a.pod_namespace = "default";
  return a;
}

json ToJson(const BindingResult& r) { return {{"Error", r.error}}; }

StatusOr<BindingResult> ParseBindingResult(const json& v) {
  if (!v.is_object()) return InvalidArgument("expected an ExtenderBindingResult object");
  BindingResult r;
  BERTH_RETURN_IF_ERROR(GetString(v, "Error", "", r.error));
  return r;
}

StatusOr<PreemptionArgs> ParsePreemptionArgs(const json& v) {
  if (!v.is_object()) return InvalidArgument("expected an ExtenderPreemptionArgs object");
  PreemptionArgs a;
  const json* pod = Member(v, "pod");
  if (!pod) return InvalidArgument("pod: missing");
  BERTH_ASSIGN_OR_RETURN(a.pod, ParsePod(*pod));
  // Go sends NodeNameToVictims; "nodeToVictims" is an older spelling.
  for (const char* key : {"NodeNameToVictims", "nodeToVictims"}) {
    const json* m = Member(v, key);
    if (!m) continue;
    BERTH_ASSIGN_OR_RETURN(a.node_to_victims, ParseVictimsMap(*m, key, false));
    a.has_victims = true;
    break;
  }
  if (const json* m = Member(v, "nodeNameToMetaVictims")) {
    BERTH_ASSIGN_OR_RETURN(a.node_to_meta_victims, ParseVictimsMap(*m, "nodeNameToMetaVictims", true));
    a.has_meta_victims = true;
  }
  return a;
}

json ToJson(const PreemptionResult& r) {
  json m = json::object();
  for (const auto& [node, victims] : r.node_to_meta_victims) m[node] = MetaVictimsJson(victims);
  json j = json::object();
  if (!r.node_to_meta_victims.empty()) j["nodeNameToMetaVictims"] = m;
  return j;
}

StatusOr<PreemptionResult> ParsePreemptionResult(const json& v) {
  if (!v.is_object()) return InvalidArgument("expected an ExtenderPreemptionResult object");
  PreemptionResult r;
  if (const json* m = Member(v, "nodeNameToMetaVictims")) {
    BERTH_ASSIGN_OR_RETURN(r.node_to_meta_victims, ParseVictimsMap(*m, "nodeNameToMetaVictims", true));
  }
  return r;
}

}  // namespace berth::server::k8s
