// Reading a federation file (format: federation.h, docs/federation.md).
// Every error names the file, the line and the key path.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "berth/common/csv.h"
#include "berth/federation/federation.h"

namespace berth::federation {

double Member::Price(const std::string& type) const {
  auto it = gpu_prices.find(type);
  return it == gpu_prices.end() ? default_price : it->second;
}

std::optional<int32_t> Federation::FindRegion(const std::string& name) const {
  for (size_t i = 0; i < regions.size(); ++i)
    if (regions[i] == name) return static_cast<int32_t>(i);
  return std::nullopt;
}

int64_t Federation::total_gpus() const {
  int64_t n = 0;
  for (const auto& m : members) n += m.cluster->total_gpus();
  return n;
}

namespace {

class Parser {
 public:
  Parser(std::string file, const ClusterLoader& load) : file_(std::move(file)), load_(load) {}
  StatusOr<Federation> Top(const YAML::Node& root);

 private:
  Status Error(const YAML::Node& at, const std::string& path, const std::string& msg) const {
    std::string where = file_;
    if (at.IsDefined()) where += ":" + std::to_string(at.Mark().line + 1);
    where += ": ";
    if (!path.empty()) where += path + ": ";
    return InvalidArgument(where + msg);
  }
  Status CheckKeys(const YAML::Node& map, const std::string& path, std::initializer_list<const char*> allowed) const {
    if (!map.IsMap()) return Error(map, path, "expected a map of keys");
    for (auto it = map.begin(); it != map.end(); ++it) {
      const std::string key = it->first.Scalar();
      bool ok = false;
      std::string list;
      for (const char* a : allowed) {
        ok = ok || key == a;
        list += (list.empty() ? "" : ", ") + std::string(a);
      }
      if (!ok) return Error(it->first, path + "." + key, "unknown key (expected one of: " + list + ")");
    }
    return Status::Ok();
  }
  StatusOr<std::string> Scalar(const YAML::Node& v, const std::string& path) const {
    if (!v.IsDefined()) return Error(v, path, "missing");
    if (!v.IsScalar()) return Error(v, path, "expected a single value");
    if (v.Scalar().empty()) return Error(v, path, "empty value");
    return v.Scalar();
  }
  // A finite number >= lo (> lo when `strict`).
  StatusOr<double> Number(const YAML::Node& v, const std::string& path, double lo, bool strict) const {
    BERTH_ASSIGN_OR_RETURN(std::string text, Scalar(v, path));
    double x = 0;
    if (!ParseDouble(text, x).ok() || !std::isfinite(x)) return Error(v, path, "expected a number, got '" + text + "'");
    if (x < lo || (strict && x == lo))
      return Error(v, path, std::string("must be ") + (strict ? "above " : "at least ") + std::to_string(lo));
    return x;
  }
  StatusOr<int32_t> Region(const Federation& f, const YAML::Node& v, const std::string& path) const {
    BERTH_ASSIGN_OR_RETURN(std::string name, Scalar(v, path));
    auto r = f.FindRegion(name);
    if (!r) return Error(v, path, "no region named '" + name + "'");
    return *r;
  }
  StatusOr<Link> ParseLink(const YAML::Node& e, const std::string& p) const;
  Status ParseMember(const YAML::Node& e, const std::string& p, int32_t region, Federation& f) const;
  Status ParseDataset(const YAML::Node& e, const std::string& p, Federation& f) const;
  Status ParseTenants(const YAML::Node& e, Federation& f) const;

 public:
  Status ParseFailures(const YAML::Node& list, Federation& f) const;

 private:

  std::string file_;
  const ClusterLoader& load_;
};

StatusOr<Link> Parser::ParseLink(const YAML::Node& e, const std::string& p) const {
  Link l;
  BERTH_ASSIGN_OR_RETURN(l.bandwidth_gbps, Number(e["bandwidth_gbps"], p + ".bandwidth_gbps", 0, true));
  BERTH_ASSIGN_OR_RETURN(double rtt_ms, Number(e["rtt_ms"], p + ".rtt_ms", 0, false));
  l.rtt = SecondsToUs(rtt_ms / 1000.0);
  if (e["egress_usd_per_gb"]) {
    BERTH_ASSIGN_OR_RETURN(l.egress_usd_per_gb, Number(e["egress_usd_per_gb"], p + ".egress_usd_per_gb", 0, false));
  }
  return l;
}

Status Parser::ParseMember(const YAML::Node& e, const std::string& p, int32_t region, Federation& f) const {
  BERTH_RETURN_IF_ERROR(
      CheckKeys(e, p, {"name", "cluster", "gpu_prices", "default_price", "failure_domain", "weight", "endpoint"}));
  Member m;
  m.region = region;
  BERTH_ASSIGN_OR_RETURN(m.name, Scalar(e["name"], p + ".name"));
  for (const auto& other : f.members)
    if (other.name == m.name) return Error(e["name"], p + ".name", "a second cluster named '" + m.name + "'");
  BERTH_ASSIGN_OR_RETURN(m.source, Scalar(e["cluster"], p + ".cluster"));
  if (e["endpoint"]) {
    BERTH_ASSIGN_OR_RETURN(m.endpoint, Scalar(e["endpoint"], p + ".endpoint"));
  }
  if (e["failure_domain"]) {
    BERTH_ASSIGN_OR_RETURN(m.failure_domain, Scalar(e["failure_domain"], p + ".failure_domain"));
  }
  if (e["default_price"]) {
    BERTH_ASSIGN_OR_RETURN(m.default_price, Number(e["default_price"], p + ".default_price", 0, false));
  }
  StatusOr<cluster::Cluster> c = load_(m.source);
  if (!c.ok()) return Error(e["cluster"], p + ".cluster", c.status().message());
  if (c->total_gpus() == 0) return Error(e["cluster"], p + ".cluster", "the cluster has no GPUs");
  m.cluster = std::make_shared<const cluster::Cluster>(std::move(c).value());
  if (const YAML::Node prices = e["gpu_prices"]; prices) {
    if (!prices.IsMap()) return Error(prices, p + ".gpu_prices", "expected a map GPU type -> USD per GPU-hour");
    for (auto it = prices.begin(); it != prices.end(); ++it) {
      const std::string type = it->first.Scalar();
      const std::string kp = p + ".gpu_prices." + type;
      if (!m.cluster->FindGpuType(type))
        return Error(it->first, kp, "the cluster has no GPU type '" + type + "'");
      BERTH_ASSIGN_OR_RETURN(double price, Number(it->second, kp, 0, false));
      m.gpu_prices[type] = price;
    }
  }
  m.weight = static_cast<double>(m.cluster->total_gpus());
  if (e["weight"]) {
    BERTH_ASSIGN_OR_RETURN(m.weight, Number(e["weight"], p + ".weight", 0, true));
  }
  f.members.push_back(std::move(m));
  return Status::Ok();
}

Status Parser::ParseDataset(const YAML::Node& e, const std::string& p, Federation& f) const {
  BERTH_RETURN_IF_ERROR(CheckKeys(e, p, {"name", "size_gib", "regions", "read"}));
  Dataset d;
  BERTH_ASSIGN_OR_RETURN(d.name, Scalar(e["name"], p + ".name"));
  if (f.dataset_index.count(d.name)) return Error(e["name"], p + ".name", "a second dataset named '" + d.name + "'");
  BERTH_ASSIGN_OR_RETURN(double gib, Number(e["size_gib"], p + ".size_gib", 0, false));
  if (gib > 1e9) return Error(e["size_gib"], p + ".size_gib", "too large");
  d.size_mib = static_cast<MiB>(std::llround(gib * 1024));
  const YAML::Node regions = e["regions"];
  if (!regions || !regions.IsSequence() || regions.size() == 0)
    return Error(regions ? regions : e, p + ".regions", "expected a non-empty list of region names (the replicas)");
  for (size_t i = 0; i < regions.size(); ++i) {
    BERTH_ASSIGN_OR_RETURN(int32_t r, Region(f, regions[i], p + ".regions[" + std::to_string(i) + "]"));
    if (std::find(d.regions.begin(), d.regions.end(), r) != d.regions.end())
      return Error(regions[i], p + ".regions[" + std::to_string(i) + "]", "region listed twice");
    d.regions.push_back(r);
  }
  if (e["read"]) {
    BERTH_ASSIGN_OR_RETURN(std::string read, Scalar(e["read"], p + ".read"));
    if (read == "staged") {
      d.read = ReadPattern::kStaged;
    } else if (read == "streamed") {
      d.read = ReadPattern::kStreamed;
    } else {
      return Error(e["read"], p + ".read", "must be staged or streamed, not '" + read + "'");
    }
  }
  f.dataset_index[d.name] = static_cast<int32_t>(f.datasets.size());
  f.datasets.push_back(std::move(d));
  return Status::Ok();
}

Status Parser::ParseTenants(const YAML::Node& list, Federation& f) const {
  if (!list.IsSequence()) return Error(list, "tenants", "expected a list of {name, home, datasets}");
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node e = list[i];
    const std::string p = "tenants[" + std::to_string(i) + "]";
    BERTH_RETURN_IF_ERROR(CheckKeys(e, p, {"name", "home", "datasets"}));
    BERTH_ASSIGN_OR_RETURN(std::string name, Scalar(e["name"], p + ".name"));
    if (f.tenant_home.count(name)) return Error(e["name"], p + ".name", "tenant '" + name + "' listed twice");
    BERTH_ASSIGN_OR_RETURN(f.tenant_home[name], Region(f, e["home"], p + ".home"));
    std::vector<int32_t>& ds = f.tenant_datasets[name];
    if (const YAML::Node d = e["datasets"]; d) {
      if (!d.IsSequence()) return Error(d, p + ".datasets", "expected a list of dataset names");
      for (size_t k = 0; k < d.size(); ++k) {
        const std::string dp = p + ".datasets[" + std::to_string(k) + "]";
        BERTH_ASSIGN_OR_RETURN(std::string dn, Scalar(d[k], dp));
        auto it = f.dataset_index.find(dn);
        if (it == f.dataset_index.end()) return Error(d[k], dp, "no dataset named '" + dn + "'");
        ds.push_back(it->second);
      }
    }
  }
  return Status::Ok();
}

Status Parser::ParseFailures(const YAML::Node& list, Federation& f) const {
  if (!list.IsSequence()) return Error(list, "failures", "expected a list of {domain | cluster, at_s, for_s, kind}");
  f.failures.clear();
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node e = list[i];
    const std::string p = "failures[" + std::to_string(i) + "]";
    BERTH_RETURN_IF_ERROR(CheckKeys(e, p, {"domain", "cluster", "at_s", "for_s", "kind"}));
    MemberFailure fail;
    if (e["kind"]) {
      BERTH_ASSIGN_OR_RETURN(std::string kind, Scalar(e["kind"], p + ".kind"));
      if (kind != "outage" && kind != "partition")
        return Error(e["kind"], p + ".kind", "expected outage or partition, found '" + kind + "'");
      fail.partition = kind == "partition";
    }
    if (e["domain"] && e["cluster"]) return Error(e, p, "give domain or cluster, not both");
    if (e["domain"]) {
      BERTH_ASSIGN_OR_RETURN(std::string d, Scalar(e["domain"], p + ".domain"));
      fail.label = "domain " + d;
      for (size_t m = 0; m < f.members.size(); ++m)
        if (f.members[m].failure_domain == d) fail.members.push_back(static_cast<int32_t>(m));
      if (fail.members.empty()) return Error(e["domain"], p + ".domain", "no cluster has failure_domain '" + d + "'");
    } else if (e["cluster"]) {
      BERTH_ASSIGN_OR_RETURN(std::string c, Scalar(e["cluster"], p + ".cluster"));
      fail.label = "cluster " + c;
      for (size_t m = 0; m < f.members.size(); ++m)
        if (f.members[m].name == c) fail.members.push_back(static_cast<int32_t>(m));
      if (fail.members.empty()) return Error(e["cluster"], p + ".cluster", "no cluster named '" + c + "'");
    } else {
      return Error(e, p, "needs domain (a failure_domain) or cluster (a member's name)");
    }
    BERTH_ASSIGN_OR_RETURN(double at, Number(e["at_s"], p + ".at_s", 0, false));
    fail.at = SecondsToUs(at);
    if (e["for_s"]) {
      BERTH_ASSIGN_OR_RETURN(double d, Number(e["for_s"], p + ".for_s", 0, true));
      fail.duration = SecondsToUs(d);
    }
    if (fail.partition) fail.label = "partition of " + fail.label;
    // One outage at a time per member.
    for (size_t k = 0; k < f.failures.size(); ++k) {
      const MemberFailure& o = f.failures[k];
      const bool overlap = (o.duration < 0 || fail.at < o.at + o.duration) &&
                           (fail.duration < 0 || o.at < fail.at + fail.duration);
      if (!overlap) continue;
      for (int32_t m : fail.members)
        if (std::find(o.members.begin(), o.members.end(), m) != o.members.end())
          return Error(e, p, "cluster " + f.members[m].name + " is already down then (failures[" +
                                 std::to_string(k) + "])");
    }
    f.failures.push_back(std::move(fail));
  }
  return Status::Ok();
}

StatusOr<Federation> Parser::Top(const YAML::Node& root) {
  BERTH_RETURN_IF_ERROR(CheckKeys(root, "federation",
                                  {"name", "description", "dispatcher_region", "digest_interval_s", "lease_s",
                                   "trace_reference_type", "intra_region", "inter_region", "regions", "links", "datasets",
                                   "tenants", "member_timeout_s", "requeue_running_after_s",
                                   "checkpoint_gib_per_gpu", "failures", "span"}));
  Federation f;
  f.name = root["name"] ? root["name"].Scalar() : file_;
  const YAML::Node regions = root["regions"];
  if (!regions || !regions.IsSequence() || regions.size() == 0)
    return Error(regions ? regions : root, "regions", "expected a non-empty list of regions");
  for (size_t i = 0; i < regions.size(); ++i) {
    const std::string p = "regions[" + std::to_string(i) + "]";
    BERTH_RETURN_IF_ERROR(CheckKeys(regions[i], p, {"name", "clusters"}));
    BERTH_ASSIGN_OR_RETURN(std::string name, Scalar(regions[i]["name"], p + ".name"));
    if (f.FindRegion(name)) return Error(regions[i]["name"], p + ".name", "a second region named '" + name + "'");
    f.regions.push_back(name);
  }
  for (size_t i = 0; i < regions.size(); ++i) {
    const std::string p = "regions[" + std::to_string(i) + "].clusters";
    const YAML::Node clusters = regions[i]["clusters"];
    if (!clusters || !clusters.IsSequence() || clusters.size() == 0)
      return Error(clusters ? clusters : regions[i], p, "expected a non-empty list of clusters");
    for (size_t k = 0; k < clusters.size(); ++k)
      BERTH_RETURN_IF_ERROR(ParseMember(clusters[k], p + "[" + std::to_string(k) + "]", static_cast<int32_t>(i), f));
  }
  const size_t nr = f.regions.size();
  // Links: intra-region default, then each listed pair (both ways unless one way is given later).
  Link intra{100, 1000, 0};  // 100 Gbit/s, 1 ms, free
  if (const YAML::Node n = root["intra_region"]; n) {
    BERTH_RETURN_IF_ERROR(CheckKeys(n, "intra_region", {"bandwidth_gbps", "rtt_ms", "egress_usd_per_gb"}));
    BERTH_ASSIGN_OR_RETURN(intra, ParseLink(n, "intra_region"));
  }
  f.links.assign(nr, std::vector<Link>(nr, Link{}));
  std::vector<std::vector<bool>> given(nr, std::vector<bool>(nr, false));
  for (size_t r = 0; r < nr; ++r) f.links[r][r] = intra;
  if (const YAML::Node n = root["inter_region"]; n) {
    BERTH_RETURN_IF_ERROR(CheckKeys(n, "inter_region", {"bandwidth_gbps", "rtt_ms", "egress_usd_per_gb"}));
    BERTH_ASSIGN_OR_RETURN(Link inter, ParseLink(n, "inter_region"));
    for (size_t a = 0; a < nr; ++a)
      for (size_t b = 0; b < nr; ++b)
        if (a != b) f.links[a][b] = inter;
  }
  if (const YAML::Node links = root["links"]; links) {
    if (!links.IsSequence()) return Error(links, "links", "expected a list of links");
    for (size_t i = 0; i < links.size(); ++i) {
      const std::string p = "links[" + std::to_string(i) + "]";
      BERTH_RETURN_IF_ERROR(
          CheckKeys(links[i], p, {"from", "to", "bandwidth_gbps", "rtt_ms", "egress_usd_per_gb", "one_way"}));
      BERTH_ASSIGN_OR_RETURN(int32_t from, Region(f, links[i]["from"], p + ".from"));
      BERTH_ASSIGN_OR_RETURN(int32_t to, Region(f, links[i]["to"], p + ".to"));
      if (from == to) return Error(links[i], p, "a link joins two different regions (intra_region sets the rest)");
      if (given[from][to]) return Error(links[i], p, "a second link " + f.regions[from] + " -> " + f.regions[to]);
      BERTH_ASSIGN_OR_RETURN(Link l, ParseLink(links[i], p));
      const bool one_way = links[i]["one_way"] && links[i]["one_way"].as<std::string>() == "true";
      f.links[from][to] = l;
      given[from][to] = true;
      if (!one_way && !given[to][from]) f.links[to][from] = l;
    }
  }
  for (size_t a = 0; a < nr; ++a)
    for (size_t b = 0; b < nr; ++b)
      if (f.links[a][b].bandwidth_gbps <= 0)
        return Error(root["links"] ? root["links"] : root, "links",
                     "no link from region " + f.regions[a] + " to " + f.regions[b]);
  if (const YAML::Node ds = root["datasets"]; ds) {
    if (!ds.IsSequence()) return Error(ds, "datasets", "expected a list of datasets");
    for (size_t i = 0; i < ds.size(); ++i)
      BERTH_RETURN_IF_ERROR(ParseDataset(ds[i], "datasets[" + std::to_string(i) + "]", f));
  }
  if (const YAML::Node t = root["tenants"]; t) BERTH_RETURN_IF_ERROR(ParseTenants(t, f));
  if (root["dispatcher_region"]) {
    BERTH_ASSIGN_OR_RETURN(f.dispatcher_region, Region(f, root["dispatcher_region"], "dispatcher_region"));
  }
  if (root["digest_interval_s"]) {
    BERTH_ASSIGN_OR_RETURN(double s, Number(root["digest_interval_s"], "digest_interval_s", 0, true));
    f.digest_interval = SecondsToUs(s);
  }
  if (root["lease_s"]) {
    BERTH_ASSIGN_OR_RETURN(double s, Number(root["lease_s"], "lease_s", 0, true));
    f.lease_ttl = SecondsToUs(s);
  }
  if (root["trace_reference_type"]) {
    BERTH_ASSIGN_OR_RETURN(f.trace_reference_type, Scalar(root["trace_reference_type"], "trace_reference_type"));
  }
  if (root["member_timeout_s"]) {
    BERTH_ASSIGN_OR_RETURN(double s, Number(root["member_timeout_s"], "member_timeout_s", 0, true));
    f.member_timeout = SecondsToUs(s);
  }
  if (root["requeue_running_after_s"]) {
    BERTH_ASSIGN_OR_RETURN(double s, Number(root["requeue_running_after_s"], "requeue_running_after_s", 0, false));
    f.requeue_running_after = SecondsToUs(s);
  }
  if (root["checkpoint_gib_per_gpu"]) {
    const YAML::Node n = root["checkpoint_gib_per_gpu"];
    BERTH_ASSIGN_OR_RETURN(f.checkpoint_gib_per_gpu, Number(n, "checkpoint_gib_per_gpu", 0, false));
    if (f.checkpoint_gib_per_gpu > 1e6) return Error(n, "checkpoint_gib_per_gpu", "too large");
  }
  if (const YAML::Node n = root["failures"]; n) BERTH_RETURN_IF_ERROR(ParseFailures(n, f));
  if (const YAML::Node n = root["span"]; n) {
    BERTH_RETURN_IF_ERROR(CheckKeys(n, "span", {"comm_fraction", "gib_per_gpu_hour", "max_parts"}));
    if (n["comm_fraction"]) {
      BERTH_ASSIGN_OR_RETURN(f.span.comm_fraction, Number(n["comm_fraction"], "span.comm_fraction", 0, false));
      if (f.span.comm_fraction > 1) return Error(n["comm_fraction"], "span.comm_fraction", "must be at most 1");
    }
    if (n["gib_per_gpu_hour"]) {
      BERTH_ASSIGN_OR_RETURN(f.span.gib_per_gpu_hour, Number(n["gib_per_gpu_hour"], "span.gib_per_gpu_hour", 0, false));
      if (f.span.gib_per_gpu_hour > 1e6) return Error(n["gib_per_gpu_hour"], "span.gib_per_gpu_hour", "too large");
    }
    if (n["max_parts"]) {
      BERTH_ASSIGN_OR_RETURN(double k, Number(n["max_parts"], "span.max_parts", 2, false));
      if (k > 8 || k != std::floor(k)) return Error(n["max_parts"], "span.max_parts", "must be a whole number from 2 to 8");
      f.span.max_parts = static_cast<int32_t>(k);
    }
  }
  return f;
}

}  // namespace

StatusOr<Federation> ParseFederationYaml(const std::string& text, const std::string& source,
                                         const ClusterLoader& load) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(source + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  if (!root.IsMap()) return InvalidArgument(source + ": expected a map with regions, links, datasets");
  try {
    return Parser(source, load).Top(root);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

StatusOr<Federation> LoadFederation(const std::string& path, const ClusterLoader& load) {
  std::ifstream in(path);
  if (!in) return NotFound(path + ": cannot open the federation file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseFederationYaml(ss.str(), path, load);
}

Status LoadMemberFailures(const std::string& path, Federation& fed) {
  std::ifstream in(path);
  if (!in) return NotFound(path + ": cannot open the member failures file");
  std::stringstream ss;
  ss << in.rdbuf();
  YAML::Node root;
  try {
    root = YAML::Load(ss.str());
  } catch (const YAML::Exception& e) {
    return InvalidArgument(path + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  static const ClusterLoader kNoLoad;
  Parser parser(path, kNoLoad);
  try {
    if (root.IsMap()) {
      for (auto it = root.begin(); it != root.end(); ++it)
        if (it->first.Scalar() != "failures")
          return InvalidArgument(path + ":" + std::to_string(it->first.Mark().line + 1) + ": " + it->first.Scalar() +
                                 ": unknown key (expected failures)");
      if (!root["failures"]) return InvalidArgument(path + ": expected a map with failures: [...]");
      return parser.ParseFailures(root["failures"], fed);
    }
    if (root.IsSequence()) return parser.ParseFailures(root, fed);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return InvalidArgument(path + ": expected failures: [{domain | cluster, at_s, for_s}, ...]");
}

}  // namespace berth::federation
