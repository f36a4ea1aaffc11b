// Cluster YAML files (format: docs/cluster-format.md). Three ways to list
// nodes, which may be mixed in one file: a tree (regions > clusters > spines >
// leaves > nodes, where any level may be skipped), a flat `nodes:` list with
// Kubernetes / Topograph topology labels, and `groups:` of compact specs.
//
// yaml-cpp reports trouble by throwing; every throw is caught in this file and
// becomes a Status naming the file and line. Our own errors name the file, the
// line and the key path ("x.yaml:12: regions[0].clusters[1].leaves[2].nodes[0].gpus:
// expected an integer, got 'eight'").
#include <yaml-cpp/yaml.h>

#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "berth/cluster/loaders.h"
#include "berth/cluster/node_labels.h"
#include "berth/common/csv.h"

namespace berth::cluster {
namespace {

// The list key that holds the children of each tree depth, and the node list.
constexpr std::array<const char*, 4> kDomainListKey = {"regions", "clusters", "spines", "leaves"};
constexpr const char* kDomainWord[4] = {"region", "cluster", "spine", "leaf"};
constexpr int64_t kMaxCount = 10'000'000;

// GPU facts from node labels (topology labels: node_labels.h).
constexpr const char* kGpuProductLabel = "nvidia.com/gpu.product";
constexpr const char* kGpuCountLabel = "nvidia.com/gpu.count";

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

// The enclosing domains of a tree entry.
struct Scope {
  std::array<std::string, 4> names;     // region .. leaf; "" where a level was skipped
  std::vector<std::string> given;       // the names given so far, for default node prefixes
};

class Loader {
 public:
  explicit Loader(std::string file) : file_(std::move(file)) {}

  Status Top(const YAML::Node& root);
  StatusOr<Cluster> Build() &&;

 private:
  // --- error reporting and typed field access ---
  Status Error(const YAML::Node& at, const std::string& path, const std::string& msg) const {
    std::string where = file_;
    if (at.IsDefined()) {
      where += ':';
      where += std::to_string(at.Mark().line + 1);
    }
    where += ": ";
    if (!path.empty()) where += path + ": ";
    return InvalidArgument(where + msg);
  }
  Status CheckKeys(const YAML::Node& map, const std::string& path, const std::vector<std::string>& allowed) const;
  StatusOr<std::optional<std::string>> Str(const YAML::Node& map, const char* key, const std::string& path) const;
  StatusOr<std::optional<int64_t>> Int(const YAML::Node& map, const char* key, const std::string& path) const;
  StatusOr<std::optional<double>> Num(const YAML::Node& map, const char* key, const std::string& path) const;
  Status NonEmptyList(const YAML::Node& seq, const std::string& path) const {
    if (!seq.IsSequence()) return Error(seq, path, "expected a list");
    if (seq.size() == 0) return Error(seq, path, "empty list");
    return Status::Ok();
  }

  // --- sections ---
  Status GpuTypes(const YAML::Node& seq, const std::string& path);
  Status Levels(const YAML::Node& map, const std::string& path);
  Status Groups(const YAML::Node& value, const std::string& path);
  Status Domains(const YAML::Node& seq, int depth, const Scope& scope, const std::string& path);
  Status Children(const YAML::Node& entry, int depth, const Scope& scope, const std::string& path);
  Status Nodes(const YAML::Node& seq, const Scope& scope, const std::string& path, bool flat);
  Status AddNode(const YAML::Node& at, const std::string& path, NodeSpec spec);

  std::string file_;
  ClusterBuilder builder_;
  SpecCursor cursor_;
  std::vector<std::string> declared_;  // declared GPU type names, in order
  std::set<std::string> domain_paths_[4];
  std::map<std::string, int> node_lines_;
};

Status Loader::CheckKeys(const YAML::Node& map, const std::string& path,
                         const std::vector<std::string>& allowed) const {
  if (!map.IsMap()) return Error(map, path, "expected a map of keys");
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = it->first.Scalar();
    bool ok = false;
    for (const auto& a : allowed) ok = ok || a == key;
    if (!ok)
      return Error(it->first, path.empty() ? key : path + "." + key,
                   "unknown key (expected one of: " + Join(allowed, ", ") + ")");
  }
  return Status::Ok();
}

StatusOr<std::optional<std::string>> Loader::Str(const YAML::Node& map, const char* key,
                                                 const std::string& path) const {
  const YAML::Node v = map[key];
  if (!v.IsDefined() || v.IsNull()) return std::optional<std::string>();
  const std::string where = path.empty() ? key : path + "." + key;
  if (!v.IsScalar()) return Error(v, where, "expected a single value");
  if (v.Scalar().empty()) return Error(v, where, "empty value");
  return std::optional<std::string>(v.Scalar());
}

StatusOr<std::optional<int64_t>> Loader::Int(const YAML::Node& map, const char* key,
                                             const std::string& path) const {
  BERTH_ASSIGN_OR_RETURN(std::optional<std::string> text, Str(map, key, path));
  if (!text) return std::optional<int64_t>();
  int64_t v = 0;
  if (!ParseInt64(*text, v).ok())
    return Error(map[key], path.empty() ? key : path + "." + key, "expected an integer, got '" + *text + "'");
  return std::optional<int64_t>(v);
}

StatusOr<std::optional<double>> Loader::Num(const YAML::Node& map, const char* key,
                                            const std::string& path) const {
  BERTH_ASSIGN_OR_RETURN(std::optional<std::string> text, Str(map, key, path));
  if (!text) return std::optional<double>();
  double v = 0;
  if (!ParseDouble(*text, v).ok() || !std::isfinite(v))
    return Error(map[key], path.empty() ? key : path + "." + key, "expected a number, got '" + *text + "'");
  return std::optional<double>(v);
}

Status Loader::Top(const YAML::Node& root) {
  if (!root.IsDefined() || root.IsNull())
    return InvalidArgument(file_ + ":1: empty cluster file (expected regions:, nodes: or groups:)");
  BERTH_RETURN_IF_ERROR(CheckKeys(root, "", {"name", "description", "gpu_types", "levels", "regions", "clusters",
                                             "spines", "leaves", "nodes", "groups"}));
  if (root["gpu_types"]) BERTH_RETURN_IF_ERROR(GpuTypes(root["gpu_types"], "gpu_types"));
  if (root["levels"]) BERTH_RETURN_IF_ERROR(Levels(root["levels"], "levels"));
  bool any = false;
  for (int depth = 0; depth < 4; ++depth) {
    const YAML::Node list = root[kDomainListKey[depth]];
    if (!list) continue;
    any = true;
    BERTH_RETURN_IF_ERROR(Domains(list, depth, Scope{}, kDomainListKey[depth]));
  }
  if (root["nodes"]) {
    any = true;
    BERTH_RETURN_IF_ERROR(Nodes(root["nodes"], Scope{}, "nodes", /*flat=*/true));
  }
  if (root["groups"]) {
    any = true;
    BERTH_RETURN_IF_ERROR(Groups(root["groups"], "groups"));
  }
  if (!any) return Error(root, "", "no nodes: expected regions:, clusters:, spines:, leaves:, nodes: or groups:");
  return Status::Ok();
}

Status Loader::GpuTypes(const YAML::Node& seq, const std::string& path) {
  BERTH_RETURN_IF_ERROR(NonEmptyList(seq, path));
  for (size_t i = 0; i < seq.size(); ++i) {
    const YAML::Node e = seq[i];
    const std::string p = path + "[" + std::to_string(i) + "]";
    BERTH_RETURN_IF_ERROR(CheckKeys(e, p, {"name", "memory_gib", "specs"}));
    GpuType t;
    BERTH_ASSIGN_OR_RETURN(std::optional<std::string> name, Str(e, "name", p));
    if (!name) return Error(e, p + ".name", "missing");
    t.name = *name;
    for (const auto& d : declared_)
      if (d == t.name) return Error(e["name"], p + ".name", "GPU type '" + t.name + "' declared twice");
    BERTH_ASSIGN_OR_RETURN(std::optional<double> mem, Num(e, "memory_gib", p));
    if (mem && *mem <= 0) return Error(e["memory_gib"], p + ".memory_gib", "must be positive");
    if (mem) t.memory_mib = static_cast<MiB>(std::llround(*mem * 1024));
    if (const YAML::Node specs = e["specs"]) {
      if (!specs.IsMap()) return Error(specs, p + ".specs", "expected a map of name: value");
      for (auto it = specs.begin(); it != specs.end(); ++it) {
        if (!it->second.IsScalar())
          return Error(it->second, p + ".specs." + it->first.Scalar(), "expected a single value");
        t.specs.emplace_back(it->first.Scalar(), it->second.Scalar());
      }
    }
    if (declared_.size() >= static_cast<size_t>(kMaxGpuTypes)) return Error(e, p, "more than 64 GPU types");
    declared_.push_back(t.name);
    builder_.DeclareGpuType(std::move(t));
  }
  return Status::Ok();
}

Status Loader::Levels(const YAML::Node& map, const std::string& path) {
  if (!map.IsMap()) return Error(map, path, "expected a map of level: {bandwidth_gbps, oversubscription}");
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string name = it->first.Scalar();
    const std::string p = path + "." + name;
    std::optional<Level> level = ParseLevel(name);
    if (!level) return Error(it->first, p, "unknown level (expected region, cluster, spine, leaf or nvlink)");
    BERTH_RETURN_IF_ERROR(CheckKeys(it->second, p, {"bandwidth_gbps", "oversubscription"}));
    BERTH_ASSIGN_OR_RETURN(std::optional<double> bw, Num(it->second, "bandwidth_gbps", p));
    BERTH_ASSIGN_OR_RETURN(std::optional<double> os, Num(it->second, "oversubscription", p));
    if (bw && *bw <= 0) return Error(it->second["bandwidth_gbps"], p + ".bandwidth_gbps", "must be positive");
    if (os && *os <= 0) return Error(it->second["oversubscription"], p + ".oversubscription", "must be positive");
    if (bw) builder_.SetLevelBandwidth(*level, *bw);
    if (os) builder_.SetLevelOversubscription(*level, *os);
  }
  return Status::Ok();
}

Status Loader::Groups(const YAML::Node& value, const std::string& path) {
  auto one = [&](const YAML::Node& v, const std::string& p) -> Status {
    if (!v.IsScalar() || v.Scalar().empty()) return Error(v, p, "expected a compact spec such as \"16x8:H100/leaf=4\"");
    Status s = AddSpecGroups(v.Scalar(), builder_, cursor_);
    if (!s.ok()) return Error(v, p, s.message());
    return Status::Ok();
  };
  if (value.IsScalar()) return one(value, path);
  BERTH_RETURN_IF_ERROR(NonEmptyList(value, path));
  for (size_t i = 0; i < value.size(); ++i)
    BERTH_RETURN_IF_ERROR(one(value[i], path + "[" + std::to_string(i) + "]"));
  return Status::Ok();
}

// A list of domains at `depth` (0 region .. 3 leaf). Each entry is one named
// domain, or `count` copies named prefix + index, with the same contents.
Status Loader::Domains(const YAML::Node& seq, int depth, const Scope& scope, const std::string& path) {
  BERTH_RETURN_IF_ERROR(NonEmptyList(seq, path));
  std::vector<std::string> allowed = {"name", "count", "prefix", "start", "bandwidth_gbps", "oversubscription"};
  for (int d = depth + 1; d < 4; ++d) allowed.push_back(kDomainListKey[d]);
  allowed.push_back("nodes");
  for (size_t i = 0; i < seq.size(); ++i) {
    const YAML::Node e = seq[i];
    const std::string p = path + "[" + std::to_string(i) + "]";
    BERTH_RETURN_IF_ERROR(CheckKeys(e, p, allowed));
    BERTH_ASSIGN_OR_RETURN(std::optional<std::string> name, Str(e, "name", p));
    BERTH_ASSIGN_OR_RETURN(std::optional<int64_t> count, Int(e, "count", p));
    BERTH_ASSIGN_OR_RETURN(std::optional<std::string> prefix, Str(e, "prefix", p));
    BERTH_ASSIGN_OR_RETURN(std::optional<int64_t> start, Int(e, "start", p));
    BERTH_ASSIGN_OR_RETURN(std::optional<double> bw, Num(e, "bandwidth_gbps", p));
    BERTH_ASSIGN_OR_RETURN(std::optional<double> os, Num(e, "oversubscription", p));
    if (bw && *bw <= 0) return Error(e["bandwidth_gbps"], p + ".bandwidth_gbps", "must be positive");
    if (os && *os <= 0) return Error(e["oversubscription"], p + ".oversubscription", "must be positive");
    std::vector<std::string> names;
    if (count) {
      if (name) return Error(e["name"], p + ".name", "a repeated " + std::string(kDomainWord[depth]) +
                                                      " takes prefix, not name");
      if (*count <= 0 || *count > kMaxCount) return Error(e["count"], p + ".count", "must be in 1..10000000");
      const std::string pre = prefix ? *prefix : std::string(kDomainWord[depth]) + "-";
      for (int64_t k = 0; k < *count; ++k) names.push_back(pre + std::to_string(start.value_or(0) + k));
    } else {
      if (prefix || start) return Error(e, p, "prefix and start need count");
      if (!name) return Error(e, p + ".name", "missing (or give count and prefix)");
      names.push_back(*name);
    }
    for (const std::string& n : names) {
      Scope inner = scope;
      inner.names[depth] = n;
      inner.given.push_back(n);
      std::vector<std::string> parts;
      for (int d = 0; d <= depth; ++d) parts.push_back(inner.names[d].empty() ? "default" : inner.names[d]);
      const std::string key = Join(parts, "/");
      if (!domain_paths_[depth].insert(key).second)
        return Error(e, p, "duplicate " + std::string(kDomainWord[depth]) + " '" + key + "'");
      if (bw || os) builder_.SetDomainLinks(static_cast<Level>(depth), key, LinkSpec{bw.value_or(0), os.value_or(0)});
      BERTH_RETURN_IF_ERROR(Children(e, depth, inner, p));
    }
  }
  return Status::Ok();
}

// The one child list of a domain entry: a deeper domain level or nodes.
Status Loader::Children(const YAML::Node& entry, int depth, const Scope& scope, const std::string& path) {
  int found = 0;
  for (int d = depth + 1; d < 4; ++d) {
    if (!entry[kDomainListKey[d]]) continue;
    ++found;
    BERTH_RETURN_IF_ERROR(Domains(entry[kDomainListKey[d]], d, scope, path + "." + kDomainListKey[d]));
  }
  if (entry["nodes"]) {
    ++found;
    BERTH_RETURN_IF_ERROR(Nodes(entry["nodes"], scope, path + ".nodes", /*flat=*/false));
  }
  std::string expected;
  for (int d = depth + 1; d < 4; ++d) expected += std::string(kDomainListKey[d]) + ", ";
  expected += "nodes";
  if (found == 0) return Error(entry, path, std::string(kDomainWord[depth]) + " has no members (expected one of: " + expected + ")");
  if (found > 1) return Error(entry, path, "give one list of members, not several (one of: " + expected + ")");
  return Status::Ok();
}

Status Loader::Nodes(const YAML::Node& seq, const Scope& scope, const std::string& path, bool flat) {
  BERTH_RETURN_IF_ERROR(NonEmptyList(seq, path));
  std::vector<std::string> allowed = {"name",   "count",     "prefix", "start",  "gpus",         "type",
                                      "gpu_type", "cpu",     "memory_gib", "nvlink", "nvlink_domain"};
  if (flat) allowed.push_back("labels");
  for (size_t i = 0; i < seq.size(); ++i) {
    const YAML::Node e = seq[i];
    const std::string p = path + "[" + std::to_string(i) + "]";
    BERTH_RETURN_IF_ERROR(CheckKeys(e, p, allowed));
    BERTH_ASSIGN_OR_RETURN(std::optional<std::string> name, Str(e, "name", p));
    BERTH_ASSIGN_OR_RETURN(std::optional<int64_t> count, Int(e, "count", p));
    BERTH_ASSIGN_OR_RETURN(std::optional<std::string> prefix, Str(e, "prefix", p));
    BERTH_ASSIGN_OR_RETURN(std::optional<int64_t> start, Int(e, "start", p));
    BERTH_ASSIGN_OR_RETURN(std::optional<int64_t> gpus, Int(e, "gpus", p));
    BERTH_ASSIGN_OR_RETURN(std::optional<std::string> type, Str(e, "type", p));
    BERTH_ASSIGN_OR_RETURN(std::optional<std::string> gpu_type, Str(e, "gpu_type", p));
    BERTH_ASSIGN_OR_RETURN(std::optional<double> cpu, Num(e, "cpu", p));
    BERTH_ASSIGN_OR_RETURN(std::optional<double> mem, Num(e, "memory_gib", p));
    BERTH_ASSIGN_OR_RETURN(std::optional<std::string> nvlink, Str(e, "nvlink", p));
    BERTH_ASSIGN_OR_RETURN(std::optional<int64_t> nvl_size, Int(e, "nvlink_domain", p));
    if (type && gpu_type) return Error(e, p, "give type or gpu_type, not both");
    if (gpu_type) type = gpu_type;

    // Topology (and GPU facts) from labels, for the flat list.
    std::array<std::string, 4> where = scope.names;
    if (const YAML::Node labels = e["labels"]) {
      if (!labels.IsMap()) return Error(labels, p + ".labels", "expected a map of label: value");
      std::map<std::string, std::string> l;
      for (auto it = labels.begin(); it != labels.end(); ++it) {
        if (!it->second.IsScalar())
          return Error(it->second, p + ".labels." + it->first.Scalar(), "expected a single value");
        l[it->first.Scalar()] = it->second.Scalar();
      }
      auto get = [&](const char* k) { auto it = l.find(k); return it == l.end() ? std::string() : it->second; };
      const LabelPlace place = PlaceFromLabels(l, {});
      for (int level = 0; level < 4; ++level) where[level] = place.names[level];
      if (!nvlink && !place.names[static_cast<int>(Level::kNvlink)].empty())
        nvlink = place.names[static_cast<int>(Level::kNvlink)];
      if (!type && !get(kGpuProductLabel).empty()) type = get(kGpuProductLabel);
      if (!gpus && !get(kGpuCountLabel).empty()) {
        int64_t g = 0;
        if (!ParseInt64(get(kGpuCountLabel), g).ok())
          return Error(labels, p + ".labels." + kGpuCountLabel, "expected an integer");
        gpus = g;
      }
    }

    const int64_t g = gpus.value_or(0);
    if (g < 0 || g > kMaxGpusPerNode)
      return Error(e["gpus"] ? e["gpus"] : e, p + ".gpus", "must be in 0.." + std::to_string(kMaxGpusPerNode));
    if (g > 0 && !type) {
      if (declared_.size() == 1) type = declared_[0];
      else return Error(e, p + ".type", "missing: a node with GPUs needs a GPU type");
    }
    if (g == 0 && type) return Error(e, p + ".type", "a node without GPUs has no GPU type (set gpus)");
    if (type && !declared_.empty()) {
      bool known = false;
      for (const auto& d : declared_) known = known || d == *type;
      if (!known)
        return Error(e["type"] ? e["type"] : e["gpu_type"] ? e["gpu_type"] : e, p + ".type",
                     "unknown GPU type '" + *type + "' (declared: " + Join(declared_, ", ") + ")");
    }
    if (cpu && *cpu < 0) return Error(e["cpu"], p + ".cpu", "must not be negative");
    if (mem && *mem < 0) return Error(e["memory_gib"], p + ".memory_gib", "must not be negative");

    NodeSpec base;
    base.cpu_milli = static_cast<MilliCpu>(std::llround(cpu.value_or(std::max<int64_t>(16, 16 * g)) * 1000));
    base.memory_mib = static_cast<MiB>(std::llround(mem.value_or(std::max<int64_t>(64, 128 * g)) * 1024));
    base.gpu_count = static_cast<int32_t>(g);
    base.gpu_type = type.value_or("");
    base.region = where[0];
    base.cluster = where[1];
    base.spine = where[2];
    base.leaf = where[3];

    if (!count) {
      if (prefix || start) return Error(e, p, "prefix and start need count");
      if (nvl_size) return Error(e["nvlink_domain"], p + ".nvlink_domain", "needs count (a group of nodes)");
      if (!name) return Error(e, p + ".name", "missing (or give count and prefix for a group)");
      base.name = *name;
      base.nvlink = nvlink.value_or("");
      BERTH_RETURN_IF_ERROR(AddNode(e, p, std::move(base)));
      continue;
    }
    if (name) return Error(e["name"], p + ".name", "a group of nodes takes prefix, not name");
    if (*count <= 0 || *count > kMaxCount) return Error(e["count"], p + ".count", "must be in 1..10000000");
    if (nvlink && nvl_size) return Error(e, p, "give nvlink or nvlink_domain, not both");
    if (nvl_size && (*nvl_size <= 0 || *count % *nvl_size != 0))
      return Error(e["nvlink_domain"], p + ".nvlink_domain",
                   "must be positive and divide count " + std::to_string(*count));
    std::string pre;
    if (prefix) pre = *prefix;
    else if (!scope.given.empty()) pre = Join(scope.given, "-") + "-n";
    else return Error(e, p + ".prefix", "missing: a group of nodes outside any named domain needs a prefix");
    const int64_t first = start.value_or(0);
    for (int64_t k = 0; k < *count; ++k) {
      NodeSpec s = base;
      s.name = pre + std::to_string(first + k);
      if (nvl_size) s.nvlink = pre + "nvl" + std::to_string(k / *nvl_size);
      else s.nvlink = nvlink.value_or("");
      BERTH_RETURN_IF_ERROR(AddNode(e, p, std::move(s)));
    }
  }
  return Status::Ok();
}

Status Loader::AddNode(const YAML::Node& at, const std::string& path, NodeSpec spec) {
  const int line = at.Mark().line + 1;
  auto [it, inserted] = node_lines_.emplace(spec.name, line);
  if (!inserted)
    return Error(at, path, "duplicate node name '" + spec.name + "' (first at line " + std::to_string(it->second) + ")");
  builder_.AddNode(std::move(spec));
  return Status::Ok();
}

StatusOr<Cluster> Loader::Build() && {
  StatusOr<Cluster> c = std::move(builder_).Build();
  if (!c.ok()) return InvalidArgument(file_ + ": " + c.status().message());
  return c;
}

}  // namespace

StatusOr<Cluster> ParseClusterYaml(std::string_view text, std::string_view source_name) {
  const std::string file(source_name);
  try {
    YAML::Node root = YAML::Load(std::string(text));
    Loader loader(file);
    BERTH_RETURN_IF_ERROR(loader.Top(root));
    return std::move(loader).Build();
  } catch (const YAML::Exception& e) {
    std::string where = file;
    if (!e.mark.is_null()) {
      where += ':';
      where += std::to_string(e.mark.line + 1);
    }
    return InvalidArgument(where + ": YAML: " + e.msg);
  }
}

StatusOr<Cluster> LoadClusterYaml(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open cluster file");
  std::ostringstream text;
  text << in.rdbuf();
  return ParseClusterYaml(text.str(), path);
}

}  // namespace berth::cluster
