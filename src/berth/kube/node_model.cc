// Kubernetes Nodes to the cluster model: parsing, the deterministic build, and
// NodeList files. nlohmann::json's parse exceptions stop in LoadNodeList.
#include "berth/json/json_parse.h"
#include "berth/kube/node_model.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "berth/cluster/node_labels.h"
#include "berth/common/k8s_quantity.h"

namespace berth::kube {

using nlohmann::json;

namespace {

constexpr std::string_view kGpuMemoryLabel = "nvidia.com/gpu.memory";  // MiB, from GPU feature discovery
constexpr std::string_view kNotReadyTaint = "node.kubernetes.io/not-ready";
constexpr std::string_view kUnreachableTaint = "node.kubernetes.io/unreachable";

// Member `key` of object `v`, or nullptr; JSON null counts as absent.
const json* Member(const json& v, std::string_view key) {
  if (!v.is_object()) return nullptr;
  auto it = v.find(key);
  return it == v.end() || it->is_null() ? nullptr : &*it;
}

Status GetString(const json& v, std::string_view key, const std::string& where, std::string& out) {
  const json* m = Member(v, key);
  if (!m) return Status::Ok();
  if (!m->is_string()) return InvalidArgument(where + std::string(key) + ": expected a string");
  out = m->get<std::string>();
  return Status::Ok();
}

Status GetObject(const json& v, std::string_view key, const std::string& where, const json*& out) {
  out = Member(v, key);
  if (out && !out->is_object()) return InvalidArgument(where + std::string(key) + ": expected an object");
  return Status::Ok();
}

// A quantity of one resource: status.allocatable, else status.capacity; 0 when
// neither has it. `what` names the field that was read, for the caller's checks.
StatusOr<int64_t> Resource(const json* allocatable, const json* capacity, const std::string& resource, int64_t scale,
                           std::string& what) {
  for (const auto& [section, name] : {std::pair{allocatable, "allocatable"}, std::pair{capacity, "capacity"}}) {
    const json* q = section ? Member(*section, resource) : nullptr;
    if (!q) continue;
    what = std::string("status.") + name + "." + resource;
    std::string text;
    if (q->is_string()) {
      text = q->get<std::string>();
    } else if (q->is_number()) {
      text = q->dump();
    } else {
      return InvalidArgument(what + ": expected a quantity");
    }
    StatusOr<int64_t> n = ParseK8sQuantity(text, scale);
    if (!n.ok()) return InvalidArgument(what + ": " + n.status().message());
    return *n;
  }
  return int64_t{0};
}

// One tolerated taint: KEY[=VALUE][:EFFECT]; empty value or effect match any.
struct Toleration {
  std::string key, value, effect;
};

Toleration ParseToleration(const std::string& text) {
  Toleration t;
  std::string rest = text;
  if (const size_t colon = rest.rfind(':'); colon != std::string::npos) {
    t.effect = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
  }
  if (const size_t eq = rest.find('='); eq != std::string::npos) {
    t.value = rest.substr(eq + 1);
    rest = rest.substr(0, eq);
  }
  t.key = rest;
  return t;
}

bool Tolerated(const std::vector<std::string>& tolerated, const std::string& key, const std::string& value,
               const std::string& effect) {
  for (const auto& text : tolerated) {
    const Toleration t = ParseToleration(text);
    if (t.key == key && (t.value.empty() || t.value == value) && (t.effect.empty() || t.effect == effect)) return true;
  }
  return false;
}

// spec.unschedulable and spec.taints into `info`.
Status ReadSpec(const json& node, const NodeModelOptions& options, NodeInfo& info) {
  const json* spec = nullptr;
  BERTH_RETURN_IF_ERROR(GetObject(node, "spec", "", spec));
  if (!spec) return Status::Ok();
  if (const json* u = Member(*spec, "unschedulable")) {
    if (!u->is_boolean()) return InvalidArgument("spec.unschedulable: expected true or false");
    info.unschedulable = u->get<bool>();
  }
  const json* taints = Member(*spec, "taints");
  if (!taints) return Status::Ok();
  if (!taints->is_array()) return InvalidArgument("spec.taints: expected an array");
  for (size_t i = 0; i < taints->size(); ++i) {
    const json& t = (*taints)[i];
    const std::string where = "spec.taints[" + std::to_string(i) + "].";
    if (!t.is_object()) return InvalidArgument("spec.taints[" + std::to_string(i) + "]: expected an object");
    std::string key, value, effect;
    BERTH_RETURN_IF_ERROR(GetString(t, "key", where, key));
    BERTH_RETURN_IF_ERROR(GetString(t, "value", where, value));
    BERTH_RETURN_IF_ERROR(GetString(t, "effect", where, effect));
    if (key.empty()) return InvalidArgument(where + "key: missing");
    if (effect != "NoSchedule" && effect != "NoExecute" && effect != "PreferNoSchedule")
      return InvalidArgument(where + "effect: '" + effect + "' (NoSchedule, PreferNoSchedule or NoExecute)");
    if (key == kNotReadyTaint || key == kUnreachableTaint) {
      info.ready = false;
      continue;
    }
    if (effect != "PreferNoSchedule" && !Tolerated(options.tolerated_taints, key, value, effect)) {
      info.unschedulable = true;
      if (effect == "NoExecute" && info.no_execute.empty()) info.no_execute = key;
    }
  }
  return Status::Ok();
}

// Resources and the Ready condition from status into `info`.
Status ReadStatus(const json& node, const NodeModelOptions& options, NodeInfo& info) {
  const json* status = nullptr;
  BERTH_RETURN_IF_ERROR(GetObject(node, "status", "", status));
  if (!status) return Status::Ok();
  const json* allocatable = nullptr;
  const json* capacity = nullptr;
  BERTH_RETURN_IF_ERROR(GetObject(*status, "allocatable", "status.", allocatable));
  BERTH_RETURN_IF_ERROR(GetObject(*status, "capacity", "status.", capacity));
  std::string what;
  BERTH_ASSIGN_OR_RETURN(info.spec.cpu_milli, Resource(allocatable, capacity, "cpu", 1000, what));
  BERTH_ASSIGN_OR_RETURN(int64_t bytes, Resource(allocatable, capacity, "memory", 1, what));
  info.spec.memory_mib = bytes >> 20;
  BERTH_ASSIGN_OR_RETURN(int64_t milli_gpus, Resource(allocatable, capacity, options.gpu_resource, 1000, what));
  if (milli_gpus % 1000 != 0) return InvalidArgument(what + ": expected a whole number of GPUs");
  if (milli_gpus / 1000 > cluster::kMaxGpusPerNode)
    return InvalidArgument(what + ": " + std::to_string(milli_gpus / 1000) + " GPUs, at most " +
                           std::to_string(cluster::kMaxGpusPerNode) + " per node");
  info.spec.gpu_count = static_cast<int32_t>(milli_gpus / 1000);

  const json* conditions = Member(*status, "conditions");
  if (!conditions) return Status::Ok();
  if (!conditions->is_array()) return InvalidArgument("status.conditions: expected an array");
  for (size_t i = 0; i < conditions->size(); ++i) {
    const json& c = (*conditions)[i];
    const std::string where = "status.conditions[" + std::to_string(i) + "].";
    if (!c.is_object()) return InvalidArgument("status.conditions[" + std::to_string(i) + "]: expected an object");
    std::string type, value;
    BERTH_RETURN_IF_ERROR(GetString(c, "type", where, type));
    BERTH_RETURN_IF_ERROR(GetString(c, "status", where, value));
    if (type == "Ready") info.ready = value == "True";
  }
  return Status::Ok();
}

StatusOr<std::map<std::string, std::string>> ReadLabels(const json& metadata) {
  std::map<std::string, std::string> labels;
  const json* l = nullptr;
  BERTH_RETURN_IF_ERROR(GetObject(metadata, "labels", "metadata.", l));
  if (!l) return labels;
  for (const auto& [key, value] : l->items()) {
    if (!value.is_string()) return InvalidArgument("metadata.labels." + key + ": expected a string");
    labels[key] = value.get<std::string>();
  }
  return labels;
}

// The GPU type and memory from the labels (see NodeInfo::spec).
Status ReadGpuType(const std::map<std::string, std::string>& labels, const NodeModelOptions& options,
                   NodeInfo& info) {
  if (info.spec.gpu_count == 0) return Status::Ok();
  auto it = labels.find(options.product_label);
  const std::string product = it == labels.end() ? "" : it->second;
  const hetero::AcceleratorSpec* known = nullptr;
  if (!product.empty() && options.catalog) {
    const std::string name = ResolveGpuProduct(*options.catalog, product);
    if (!name.empty()) known = options.catalog->Find(name);
  }
  info.spec.gpu_type = known ? known->name : !product.empty() ? product : options.gpu_resource;
  if (auto m = labels.find(std::string(kGpuMemoryLabel)); m != labels.end()) {
    StatusOr<int64_t> mib = ParseK8sQuantity(m->second, 1);
    if (!mib.ok()) return InvalidArgument("metadata.labels." + std::string(kGpuMemoryLabel) + ": expected MiB, got '" +
                                          m->second + "'");
    info.spec.gpu_memory_mib = *mib;
  } else if (known && known->memory_gib > 0) {
    info.spec.gpu_memory_mib = static_cast<MiB>(known->memory_gib * 1024 + 0.5);
  }
  return Status::Ok();
}

bool EndsWithNoCase(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && hetero::Lower(s.substr(s.size() - suffix.size())) == hetero::Lower(suffix);
}

}  // namespace

std::string ResolveGpuProduct(const hetero::Catalog& catalog, std::string_view product) {
  std::string p(product);
  if (const auto* a = catalog.Find(p)) return a->name;
  // MIG ("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb") and time-slicing ("...-SHARED") variants.
  if (const size_t mig = hetero::Lower(p).find("-mig-"); mig != std::string::npos) p = p.substr(0, mig);
  if (EndsWithNoCase(p, "-SHARED")) p = p.substr(0, p.size() - 7);
  if (const auto* a = catalog.Find(p)) return a->name;
  for (std::string_view prefix : {"NVIDIA-", "Tesla-", "NVIDIA "}) {
    if (p.size() > prefix.size() && hetero::Lower(p.substr(0, prefix.size())) == hetero::Lower(prefix))
      if (const auto* a = catalog.Find(p.substr(prefix.size()))) return a->name;
  }
  return "";
}

StatusOr<NodeInfo> ParseNode(const json& node, const NodeModelOptions& options) {
  if (!node.is_object()) return InvalidArgument("node: expected an object (a v1.Node)");
  if (const json* kind = Member(node, "kind"); kind && (!kind->is_string() || kind->get<std::string>() != "Node"))
    return InvalidArgument("node: kind " + kind->dump() + ", expected \"Node\"");
  const json* metadata = nullptr;
  BERTH_RETURN_IF_ERROR(GetObject(node, "metadata", "node: ", metadata));
  if (!metadata) return InvalidArgument("node: metadata: missing");
  NodeInfo info;
  BERTH_RETURN_IF_ERROR(GetString(*metadata, "name", "node: metadata.", info.spec.name));
  if (info.spec.name.empty()) return InvalidArgument("node: metadata.name: missing");
  auto named = [&](const Status& s) { return InvalidArgument("node " + info.spec.name + ": " + s.message()); };
  if (Status s = GetString(*metadata, "uid", "metadata.", info.uid); !s.ok()) return named(s);
  if (Status s = GetString(*metadata, "resourceVersion", "metadata.", info.resource_version); !s.ok()) return named(s);
  StatusOr<std::map<std::string, std::string>> labels = ReadLabels(*metadata);
  if (!labels.ok()) return named(labels.status());
  if (Status s = ReadStatus(node, options, info); !s.ok()) return named(s);
  if (Status s = ReadSpec(node, options, info); !s.ok()) return named(s);
  if (Status s = ReadGpuType(*labels, options, info); !s.ok()) return named(s);
  const cluster::LabelPlace place = cluster::PlaceFromLabels(*labels, options.levels);
  info.spec.region = place.names[static_cast<int>(cluster::Level::kRegion)];
  info.spec.cluster = place.names[static_cast<int>(cluster::Level::kCluster)];
  info.spec.spine = place.names[static_cast<int>(cluster::Level::kSpine)];
  info.spec.leaf = place.names[static_cast<int>(cluster::Level::kLeaf)];
  info.spec.nvlink = place.names[static_cast<int>(cluster::Level::kNvlink)];
  return info;
}

StatusOr<cluster::Cluster> BuildCluster(const std::vector<NodeInfo>& nodes, const NodeModelOptions& /*options*/) {
  std::vector<const cluster::NodeSpec*> order;
  order.reserve(nodes.size());
  for (const auto& n : nodes) order.push_back(&n.spec);
  auto key = [](const cluster::NodeSpec* s) {
    return std::tie(s->region, s->cluster, s->spine, s->leaf, s->nvlink, s->name);
  };
  std::sort(order.begin(), order.end(), [&](const auto* a, const auto* b) { return key(a) < key(b); });
  cluster::ClusterBuilder builder;
  for (const auto* s : order) builder.AddNode(*s);
  return std::move(builder).Build();
}

StatusOr<std::vector<NodeInfo>> ParseNodeList(const json& list, std::string_view source_name,
                                              const NodeModelOptions& options) {
  const std::string src(source_name);
  const json* items = &list;
  std::string prefix = "";
  if (list.is_object()) {
    const json* kind = Member(list, "kind");
    if (kind && !(kind->is_string() && (kind->get<std::string>() == "NodeList" || kind->get<std::string>() == "List")))
      return InvalidArgument(src + ": kind " + kind->dump() + ", expected \"NodeList\" (kubectl get nodes -o json)");
    items = Member(list, "items");
    if (!items) return InvalidArgument(src + ": items: missing (expected a v1.NodeList)");
    prefix = "items";
  }
  if (!items->is_array())
    return InvalidArgument(src + ": " + (prefix.empty() ? "expected a v1.NodeList or an array of Nodes"
                                                        : "items: expected an array"));
  std::vector<NodeInfo> out;
  out.reserve(items->size());
  for (size_t i = 0; i < items->size(); ++i) {
    StatusOr<NodeInfo> n = ParseNode((*items)[i], options);
    if (!n.ok()) return InvalidArgument(src + ": " + prefix + "[" + std::to_string(i) + "]: " + n.status().message());
    out.push_back(std::move(n).value());
  }
  return out;
}

StatusOr<cluster::Cluster> LoadNodeList(const std::string& path, const NodeModelOptions& options) {
  std::ifstream in(path);
  if (!in) return NotFound(path + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  // A file from `kubectl get nodes -o json`: the bounded parser, with room
  // for a large cluster's list and Kubernetes' nesting.
  auto parsed = berth::json::ParseUntrusted(text.str(), {.max_bytes = size_t{1} << 30, .max_depth = 128});
  if (!parsed.ok()) return InvalidArgument(path + ": not JSON (" + parsed.status().message() + ")");
  json doc = std::move(parsed).value();
  BERTH_ASSIGN_OR_RETURN(std::vector<NodeInfo> nodes, ParseNodeList(doc, path, options));
  StatusOr<cluster::Cluster> c = BuildCluster(nodes, options);
  if (!c.ok()) return InvalidArgument(path + ": " + c.status().message());
  return c;
}

}  // namespace berth::kube
