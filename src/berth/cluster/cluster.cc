// Cluster construction and look-ups.
#include "berth/cluster/cluster.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <sstream>

namespace berth::cluster {

const char* LevelName(Level level) {
  switch (level) {
    case Level::kRegion: return "region";
    case Level::kCluster: return "cluster";
    case Level::kSpine: return "spine";
    case Level::kLeaf: return "leaf";
    case Level::kNvlink: return "nvlink";
  }
  return "?";
}

std::optional<Level> ParseLevel(std::string_view name) {
  if (name == "region") return Level::kRegion;
  if (name == "cluster" || name == "zone") return Level::kCluster;
  if (name == "spine" || name == "pod") return Level::kSpine;
  if (name == "leaf" || name == "block" || name == "rail") return Level::kLeaf;
  if (name == "nvlink" || name == "node" || name == "accelerator") return Level::kNvlink;
  return std::nullopt;
}

namespace {
std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
}  // namespace

std::optional<GpuTypeId> Cluster::FindGpuType(std::string_view name) const {
  for (size_t i = 0; i < gpu_types_.size(); ++i)
    if (gpu_types_[i].name == name) return GpuTypeId(static_cast<int16_t>(i));
  const std::string key = Lower(name);
  std::optional<GpuTypeId> by_case;
  for (size_t i = 0; i < gpu_types_.size(); ++i) {
    if (Lower(gpu_types_[i].name) != key) continue;
    if (by_case) return std::nullopt;  // two types differ only in case: not guessed
    by_case = GpuTypeId(static_cast<int16_t>(i));
  }
  if (by_case) return by_case;
  auto it = gpu_type_aliases_.find(key);
  if (it == gpu_type_aliases_.end() || it->second < 0) return std::nullopt;
  return GpuTypeId(it->second);
}

void Cluster::AddGpuTypeAlias(std::string_view alias, GpuTypeId type) {
  if (alias.empty() || !type.valid() || type.value() >= static_cast<int16_t>(gpu_types_.size())) return;
  for (const GpuType& t : gpu_types_)
    if (t.name == alias) return;
  auto [it, added] = gpu_type_aliases_.emplace(Lower(alias), type.value());
  if (!added && it->second != type.value()) it->second = -1;
}

std::optional<NodeId> Cluster::FindNode(std::string_view name) const {
  auto it = node_index_.find(std::string(name));
  if (it == node_index_.end()) return std::nullopt;
  return NodeId(it->second);
}

Cluster::TypeSetParse Cluster::ParseTypeSet(std::string_view spec) const {
  TypeSetParse out;
  size_t start = 0;
  bool any_piece = false;
  while (start <= spec.size()) {
    size_t bar = spec.find('|', start);
    if (bar == std::string_view::npos) bar = spec.size();
    std::string_view piece = spec.substr(start, bar - start);
    while (!piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
    while (!piece.empty() && piece.back() == ' ') piece.remove_suffix(1);
    if (!piece.empty()) {
      any_piece = true;
      if (auto t = FindGpuType(piece)) out.set.Add(*t);
    }
    start = bar + 1;
  }
  out.unknown = any_piece && out.set.empty();
  return out;
}

std::string Cluster::Summary() const {
  std::map<std::string, std::pair<int, int64_t>> by_type;
  for (const Node& n : nodes_) {
    if (n.gpu_count == 0) continue;
    auto& e = by_type[gpu_types_[n.gpu_type.value()].name];
    e.first += 1;
    e.second += n.gpu_count;
  }
  std::ostringstream os;
  os << nodes_.size() << " nodes, " << total_gpus_ << " GPUs";
  for (const auto& [name, e] : by_type) os << "; " << name << " " << e.first << "/" << e.second;
  os << "; " << by_level_[static_cast<int>(Level::kCluster)].size() << " cluster(s), "
     << by_level_[static_cast<int>(Level::kSpine)].size() << " spine(s), "
     << by_level_[static_cast<int>(Level::kLeaf)].size() << " leaf block(s)";
  return os.str();
}

StatusOr<Cluster> ClusterBuilder::Build() && {
  Cluster c;
  const size_t n = specs_.size();
  if (n == 0) return InvalidArgument("cluster has no nodes");
  if (n > static_cast<size_t>(INT32_MAX / 2)) return InvalidArgument("too many nodes");
  for (GpuType& t : declared_types_) {
    if (t.name.empty()) return InvalidArgument("a GPU type has no name");
    if (t.memory_mib < 0) return InvalidArgument("GPU type " + t.name + ": negative memory");
    if (c.FindGpuType(t.name)) return InvalidArgument("duplicate GPU type '" + t.name + "'");
    if (c.gpu_types_.size() >= kMaxGpuTypes) return InvalidArgument("more than 64 GPU types");
    if (t.memory_mib == 0) t.memory_mib = KnownGpuMemoryMib(t.name);
    c.gpu_types_.push_back(std::move(t));
  }
  for (int l = 0; l < kNumLevels; ++l) {
    if (!(oversub_[l] > 0)) return InvalidArgument(std::string(LevelName(static_cast<Level>(l))) + ": oversubscription must be positive");
    if (bandwidth_[l] < 0) return InvalidArgument(std::string(LevelName(static_cast<Level>(l))) + ": negative bandwidth");
  }
  // Per-domain overrides, keyed by level and path; each must name a real domain.
  std::map<std::pair<int, std::string>, std::pair<LinkSpec, bool>> overrides;
  for (const DomainLinks& d : domain_links_) {
    if (d.links.oversubscription < 0 || d.links.bandwidth_gbps < 0)
      return InvalidArgument(std::string(LevelName(d.level)) + " " + d.path + ": negative bandwidth or oversubscription");
    overrides[{static_cast<int>(d.level), d.path}] = {d.links, false};
  }

  // Domain keys per level (full path, so "leaf-0" in two spines are distinct).
  std::vector<std::array<std::string, kNumLevels>> keys(n);
  std::array<std::map<std::string, int>, kNumLevels> first_seen;
  std::vector<std::array<int, kNumLevels>> order(n);
  for (size_t i = 0; i < n; ++i) {
    const NodeSpec& s = specs_[i];
    const std::string parts[kNumLevels] = {
        s.region.empty() ? "default" : s.region, s.cluster.empty() ? "default" : s.cluster,
        s.spine.empty() ? "default" : s.spine, s.leaf.empty() ? "default" : s.leaf,
        s.nvlink.empty() ? "node:" + s.name : s.nvlink};
    std::string path;
    for (int l = 0; l < kNumLevels; ++l) {
      path += (l ? "/" : "") + parts[l];
      keys[i][l] = path;
      auto [it, inserted] = first_seen[l].emplace(path, static_cast<int>(first_seen[l].size()));
      order[i][l] = it->second;
    }
  }
  std::vector<size_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return order[a] < order[b]; });

  c.nodes_.reserve(n);
  int32_t gpu = 0;
  std::array<std::string, kNumLevels> open_key;
  std::array<int32_t, kNumLevels> open_dom;
  open_dom.fill(-1);
  for (size_t pos = 0; pos < n; ++pos) {
    const NodeSpec& s = specs_[idx[pos]];
    if (s.name.empty()) return InvalidArgument("node " + std::to_string(idx[pos]) + " has no name");
    if (s.cpu_milli < 0 || s.memory_mib < 0 || s.gpu_count < 0)
      return InvalidArgument("node " + s.name + ": negative capacity");
    if (s.gpu_count > kMaxGpusPerNode)
      return InvalidArgument("node " + s.name + ": more than " + std::to_string(kMaxGpusPerNode) + " GPUs");
    if (s.gpu_count > 0 && s.gpu_type.empty())
      return InvalidArgument("node " + s.name + ": GPUs without a GPU type");
    Node node;
    node.name = s.name;
    node.cpu_milli = s.cpu_milli;
    node.memory_mib = s.memory_mib;
    node.gpu_count = s.gpu_count;
    node.first_gpu = gpu;
    if (s.gpu_count > 0) {
      auto t = c.FindGpuType(s.gpu_type);
      if (!t) {
        if (c.gpu_types_.size() >= kMaxGpuTypes) return InvalidArgument("more than 64 GPU types");
        c.gpu_types_.push_back(
            {s.gpu_type, s.gpu_memory_mib > 0 ? s.gpu_memory_mib : KnownGpuMemoryMib(s.gpu_type), {}});
        t = GpuTypeId(static_cast<int16_t>(c.gpu_types_.size() - 1));
      }
      node.gpu_type = *t;
    }
    const NodeId id(static_cast<int32_t>(pos));
    if (!c.node_index_.emplace(s.name, id.value()).second)
      return InvalidArgument("duplicate node name '" + s.name + "'");
    for (int l = 0; l < kNumLevels; ++l) {
      const std::string& key = keys[idx[pos]][l];
      if (open_dom[l] < 0 || open_key[l] != key) {
        Domain d;
        d.level = static_cast<Level>(l);
        d.name = key.substr(key.rfind('/') == std::string::npos ? 0 : key.rfind('/') + 1);
        d.parent = l == 0 ? DomainId() : DomainId(open_dom[l - 1]);
        d.begin = id;
        d.end = id;
        d.bandwidth_gbps = bandwidth_[l];
        d.oversubscription = oversub_[l];
        if (!overrides.empty()) {
          auto it = overrides.find({l, key});
          if (it != overrides.end()) {
            if (it->second.first.bandwidth_gbps > 0) d.bandwidth_gbps = it->second.first.bandwidth_gbps;
            if (it->second.first.oversubscription > 0) d.oversubscription = it->second.first.oversubscription;
            it->second.second = true;
          }
        }
        open_dom[l] = static_cast<int32_t>(c.domains_.size());
        open_key[l] = key;
        c.by_level_[l].push_back(DomainId(open_dom[l]));
        c.domains_.push_back(std::move(d));
      }
      Domain& d = c.domains_[open_dom[l]];
      d.end = NodeId(id.value() + 1);
      d.gpus += s.gpu_count;
      node.domain[l] = DomainId(open_dom[l]);
    }
    for (int g = 0; g < s.gpu_count; ++g) c.gpu_node_.push_back(id);
    gpu += s.gpu_count;
    c.max_gpus_per_node_ = std::max(c.max_gpus_per_node_, s.gpu_count);
    c.nodes_.push_back(std::move(node));
  }
  for (const auto& [key, value] : overrides)
    if (!value.second)
      return InvalidArgument(std::string("link settings for unknown ") + LevelName(static_cast<Level>(key.first)) +
                             " '" + key.second + "'");
  c.total_gpus_ = gpu;
  // Children ranges: the domains of the next level are in node order, so the
  // children of each domain are a contiguous run.
  c.child_range_.assign(c.domains_.size(), {0, 0});
  for (int l = 0; l + 1 < kNumLevels; ++l) {
    const auto& next = c.by_level_[l + 1];
    for (size_t i = 0; i < next.size(); ++i) {
      auto& r = c.child_range_[c.domains_[next[i].value()].parent.value()];
      if (r.second == 0) r.first = static_cast<int32_t>(i);
      ++r.second;
    }
  }
  for (const Domain& d : c.domains_) {
    auto& m = c.max_domain_gpus_[static_cast<int>(d.level)];
    m = std::max(m, d.gpus);
    if (d.level == Level::kNvlink && d.end.value() - d.begin.value() > 1) c.single_node_nvlink_ = false;
  }
  return c;
}

}  // namespace berth::cluster
