// Kueue, Volcano and KAI queue objects onto Berth's queue tree (queue_import.h).
#include "berth/tenancy/import/queue_import.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "berth/common/k8s_quantity.h"
#include "berth/tenancy/queue_tree.h"

namespace berth::tenancy {
namespace {

const char* kGpuResources[] = {"nvidia.com/gpu", "amd.com/gpu"};
const char* kProductLabels[] = {"nvidia.com/gpu.product", "amd.com/gpu.product", "accelerator",
                                "cloud.google.com/gke-accelerator", "node.kubernetes.io/instance-gpu"};

// n[k1][k2]...: an undefined node (false) when a step is missing or not a map,
// never a throw (yaml-cpp throws when a missing key is indexed again).
YAML::Node At(const YAML::Node& n, std::initializer_list<const char*> keys) {
  YAML::Node cur = n;
  for (const char* k : keys) {
    const YAML::Node& c = cur;
    if (!c || !c.IsMap() || !c[k]) return YAML::Node(YAML::NodeType::Undefined);
    cur.reset(c[k]);  // rebind (operator= would assign into the document)
  }
  return cur;
}

std::string Str(const YAML::Node& n) { return n && n.IsScalar() ? n.as<std::string>("") : ""; }

bool IsGpuResource(const std::string& r) {
  for (const char* g : kGpuResources)
    if (r == g) return true;
  return false;
}

struct Object {
  std::string api_version, kind, name, ns;
  YAML::Node node;
  int line = 0;
};

class Importer {
 public:
  Importer(std::string source) : source_(std::move(source)) {}

  Status Collect(const YAML::Node& n) {
    if (!n || n.IsNull()) return Status::Ok();
    if (!n.IsMap()) return Err(n, "", "expected a Kubernetes object (a map with apiVersion and kind)");
    if (n["kind"] && n["kind"].as<std::string>("") == "List") {
      const YAML::Node items = n["items"];
      if (items && items.IsSequence())
        for (const auto& item : items) BERTH_RETURN_IF_ERROR(Collect(item));
      return Status::Ok();
    }
    Object o;
    o.api_version = n["apiVersion"] ? n["apiVersion"].as<std::string>("") : "";
    o.kind = n["kind"] ? n["kind"].as<std::string>("") : "";
    if (o.api_version.empty() || o.kind.empty()) return Err(n, "", "an object without apiVersion or kind");
    if (const YAML::Node md = n["metadata"]; md && md.IsMap()) {
      o.name = md["name"] ? md["name"].as<std::string>("") : "";
      o.ns = md["namespace"] ? md["namespace"].as<std::string>("") : "";
    }
    if (o.name.empty()) return Err(n, o.kind, "metadata.name is missing");
    o.node = n;
    o.line = n.Mark().line + 1;
    objects_.push_back(std::move(o));
    return Status::Ok();
  }

  StatusOr<QueueDialect> Dialect(std::optional<QueueDialect> asked) const {
    std::optional<QueueDialect> seen;
    for (const Object& o : objects_) {
      std::optional<QueueDialect> d;
      if (o.api_version.rfind("kueue.x-k8s.io/", 0) == 0) d = QueueDialect::kKueue;
      else if (o.api_version.rfind("scheduling.volcano.sh/", 0) == 0) d = QueueDialect::kVolcano;
      else if (o.api_version.rfind("scheduling.run.ai/", 0) == 0) d = QueueDialect::kKai;
      else
        return InvalidArgument(Loc(o) + ": apiVersion " + o.api_version +
                               " is not a queue API Berth imports (kueue.x-k8s.io, scheduling.volcano.sh, "
                               "scheduling.run.ai)");
      if (seen && *seen != *d) return InvalidArgument(Loc(o) + ": objects of two schedulers in one file");
      seen = d;
    }
    if (asked && seen && *asked != *seen) return InvalidArgument(source_ + ": the objects are not of the format asked for");
    if (asked) return *asked;
    if (!seen) return InvalidArgument(source_ + ": no objects");
    return *seen;
  }

  Status Kueue(ImportedQueues& out) {
    std::map<std::string, std::string> flavor_type;  // ResourceFlavor -> GPU type (product)
    for (const Object& o : objects_) {
      if (o.kind != "ResourceFlavor") continue;
      std::string type;
      if (const YAML::Node labels = At(o.node, {"spec", "nodeLabels"}); labels && labels.IsMap())
        for (const char* l : kProductLabels)
          if (labels[l]) {
            type = labels[l].as<std::string>("");
            break;
          }
      flavor_type[o.name] = type.empty() ? o.name : type;  // the flavor's name may be the type itself
      if (type.empty())
        out.notes.push_back(Loc(o) + ": no GPU product label in spec.nodeLabels; its name '" + o.name +
                            "' is taken as the GPU type");
    }
    std::set<std::string> defined;
    // Cohorts (v1beta1: names in ClusterQueues; v1alpha1 Cohort objects may nest them).
    std::map<std::string, std::string> cohort_parent;
    std::map<std::string, const Object*> cohort_objects;
    for (const Object& o : objects_)
      if (o.kind == "Cohort") {
        cohort_objects[o.name] = &o;
        cohort_parent[o.name] = Str(At(o.node, {"spec", "parent"}));
      }
    for (const Object& o : objects_)
      if (o.kind == "ClusterQueue" && At(o.node, {"spec", "cohort"}))
        cohort_parent.emplace(At(o.node, {"spec", "cohort"}).as<std::string>(""), "");
    for (const auto& [name, parent] : cohort_parent) {
      QueueSpec q;
      q.name = name;
      q.parent = parent;
      auto it = cohort_objects.find(name);
      if (it != cohort_objects.end())
        BERTH_RETURN_IF_ERROR(KueueQuotas(*it->second, flavor_type, q, out));
      Add(std::move(q), it != cohort_objects.end() ? it->second->line : 0, out);
    }
    std::map<std::string, std::vector<const Object*>> local_queues;  // ClusterQueue -> LocalQueues
    for (const Object& o : objects_)
      if (o.kind == "LocalQueue") {
        const std::string cq = Str(At(o.node, {"spec", "clusterQueue"}));
        if (cq.empty()) return Err(o.node, Where(o), "spec.clusterQueue is missing");
        local_queues[cq].push_back(&o);
      }
    for (const Object& o : objects_) {
      if (o.kind != "ClusterQueue") continue;
      QueueSpec q;
      q.name = o.name;
      q.parent = Str(At(o.node, {"spec", "cohort"}));
      if (const YAML::Node w = At(o.node, {"spec", "fairSharing", "weight"}); w) {
        StatusOr<int64_t> milli = ParseK8sQuantity(w.as<std::string>(""), 1000);
        if (!milli.ok() || *milli <= 0) return Err(w, Where(o), "spec.fairSharing.weight: expected a positive quantity");
        q.weight = static_cast<double>(*milli) / 1000.0;
      }
      BERTH_RETURN_IF_ERROR(KueueQuotas(o, flavor_type, q, out));
      // A ClusterQueue admits only to the flavors it lists: across all types it may use its nominal quotas plus
      // what it may borrow (nothing without a cohort).
      if (!q.quotas.empty()) {
        int64_t most = 0;
        bool bounded = true;
        for (const auto& [type, quota] : q.quotas) {
          most += quota.guarantee;
          if (!q.parent.empty()) {
            if (quota.borrow_limit == kUnlimited) bounded = false;
            else most += quota.borrow_limit;
          }
        }
        if (bounded) q.quotas["*"].limit = most;
      }
      if (At(o.node, {"spec", "preemption"})) out.notes.push_back(Loc(o) + ": spec.preemption is not mapped (Berth reclaims guarantees by preemption; see --policy)");
      if (At(o.node, {"spec", "namespaceSelector"})) out.notes.push_back(Loc(o) + ": spec.namespaceSelector is not mapped");
      const int line = o.line;
      auto lq = local_queues.find(o.name);
      if (lq == local_queues.end()) {
        Add(std::move(q), line, out);
        continue;
      }
      const std::string cq = q.name;
      Add(std::move(q), line, out);
      // Each LocalQueue is a leaf under its ClusterQueue: jobs name it as NAMESPACE.NAME, and a namespace with one
      // LocalQueue is that queue's tenant.
      std::map<std::string, int> per_ns;
      for (const Object* l : lq->second) ++per_ns[l->ns.empty() ? "default" : l->ns];
      for (const Object* l : lq->second) {
        QueueSpec leaf;
        const std::string ns = l->ns.empty() ? "default" : l->ns;
        leaf.name = ns + "." + l->name;
        leaf.parent = cq;
        if (per_ns[ns] == 1) leaf.tenants.push_back(ns);
        Add(std::move(leaf), l->line, out);
      }
    }
    for (const auto& [cq, lqs] : local_queues) {
      bool found = false;
      for (const Object& o : objects_) found |= o.kind == "ClusterQueue" && o.name == cq;
      if (!found) return Err(lqs.front()->node, Where(*lqs.front()), "spec.clusterQueue '" + cq + "' is not defined");
    }
    for (const Object& o : objects_)
      if (o.kind != "ResourceFlavor" && o.kind != "ClusterQueue" && o.kind != "Cohort" && o.kind != "LocalQueue")
        out.notes.push_back(Loc(o) + ": kind " + o.kind + " is not mapped");
    // Kueue borrows only inside a cohort: a ClusterQueue with no cohort never borrows, and a cohort's queues share
    // their nominal quotas and nothing more. So a queue with no cohort gets borrow_limit 0, and a cohort the sum of
    // its members' guarantees (plus its own), with borrow_limit 0 (deepest cohorts first).
    std::map<std::string, QueueSpec*> by_name;
    for (QueueSpec& q : out.file.queues) by_name[q.name] = &q;
    std::map<std::string, int> depth;
    for (const auto& [name, parent] : cohort_parent) {
      int d = 0;
      for (std::string p = parent; !p.empty() && d < 64; p = cohort_parent.count(p) ? cohort_parent[p] : "") ++d;
      depth[name] = d;
    }
    std::vector<std::string> cohorts;
    for (const auto& [name, d] : depth) cohorts.push_back(name);
    std::stable_sort(cohorts.begin(), cohorts.end(), [&](const std::string& a, const std::string& b) { return depth[a] > depth[b]; });
    for (const std::string& c : cohorts) {
      QueueSpec* cohort = by_name[c];
      std::map<std::string, int64_t> sum;
      for (const QueueSpec& q : out.file.queues)
        if (q.parent == c)
          for (const auto& [type, quota] : q.quotas)
            if (type != "*") sum[type] += quota.guarantee;  // "*" holds members' limits, not guarantees
      for (const auto& [type, g] : sum) {
        Quota& quota = cohort->quotas[type];
        quota.guarantee += g;
        quota.borrow_limit = 0;
      }
    }
    for (QueueSpec& q : out.file.queues)
      if (q.parent.empty() && !cohort_parent.count(q.name))
        for (auto& [type, quota] : q.quotas)
          if (type != "*" && quota.borrow_limit == kUnlimited) quota.borrow_limit = 0;
    return Status::Ok();
  }

  Status Volcano(ImportedQueues& out) {
    for (const Object& o : objects_) {
      if (o.kind != "Queue") {
        out.notes.push_back(Loc(o) + ": kind " + o.kind + " is not mapped");
        continue;
      }
      const YAML::Node spec = At(o.node, {"spec"});
      QueueSpec q;
      q.name = o.name;
      if (spec["parent"] && spec["parent"].as<std::string>("") != "root") q.parent = spec["parent"].as<std::string>("");
      if (spec["weight"]) {
        const double w = spec["weight"].as<double>(0);
        if (!(w > 0)) return Err(spec["weight"], Where(o), "spec.weight: expected a positive number");
        q.weight = w;
      }
      Quota quota;
      bool any = false;
      // guarantee.resource: reserved for the queue; deserved (capacity plugin): its share under contention.
      const YAML::Node guarantee = At(spec, {"guarantee", "resource"});
      const YAML::Node deserved = spec["deserved"];
      BERTH_RETURN_IF_ERROR(GpuAmount(guarantee ? guarantee : deserved,
                                      guarantee ? "spec.guarantee.resource" : "spec.deserved", o, &quota.guarantee, &any));
      if (guarantee && deserved) {
        int64_t d = 0;
        bool has = false;
        BERTH_RETURN_IF_ERROR(GpuAmount(deserved, "spec.deserved", o, &d, &has));
        if (has && d > quota.guarantee) {
          out.notes.push_back(Loc(o) + ": spec.deserved above spec.guarantee: the larger, deserved, is the guarantee");
          quota.guarantee = d;
        }
      }
      bool has_cap = false;
      int64_t cap = 0;
      BERTH_RETURN_IF_ERROR(GpuAmount(spec["capability"], "spec.capability", o, &cap, &has_cap));
      if (has_cap) quota.limit = cap, any = true;
      if (quota.limit != kUnlimited && quota.limit < quota.guarantee)
        return Err(spec["capability"], Where(o), "spec.capability GPUs below the guarantee");
      if (spec["reclaimable"] && !spec["reclaimable"].as<bool>(true)) {
        quota.lend_limit = 0;
        out.notes.push_back(Loc(o) + ": reclaimable: false maps to lend_limit 0 (nothing of its guarantee is lent)");
      }
      if (any) q.quotas["*"] = quota;
      Add(std::move(q), o.line, out);
    }
    return Status::Ok();
  }

  Status Kai(ImportedQueues& out) {
    for (const Object& o : objects_) {
      if (o.kind != "Queue") {
        out.notes.push_back(Loc(o) + ": kind " + o.kind + " is not mapped");
        continue;
      }
      const YAML::Node spec = At(o.node, {"spec"});
      QueueSpec q;
      q.name = o.name;
      if (spec["parentQueue"]) q.parent = spec["parentQueue"].as<std::string>("");
      const YAML::Node gpu = At(spec, {"resources", "gpu"});
      if (gpu) {
        Quota quota;
        auto number = [&](const char* key, int64_t* field) -> Status {
          const YAML::Node v = gpu[key];
          if (!v) return Status::Ok();
          const double d = v.as<double>(std::nan(""));
          if (std::isnan(d)) return Err(v, Where(o), std::string("spec.resources.gpu.") + key + ": expected a number");
          if (d < 0) return Status::Ok();  // -1: unlimited (limit) or none (quota)
          *field = static_cast<int64_t>(std::llround(d * 1000));
          return Status::Ok();
        };
        BERTH_RETURN_IF_ERROR(number("quota", &quota.guarantee));
        BERTH_RETURN_IF_ERROR(number("limit", &quota.limit));
        if (quota.limit != kUnlimited && quota.limit < quota.guarantee)
          return Err(gpu["limit"], Where(o), "spec.resources.gpu.limit below its quota");
        if (const YAML::Node w = gpu["overQuotaWeight"]; w) {
          const double d = w.as<double>(0);
          if (!(d > 0)) return Err(w, Where(o), "spec.resources.gpu.overQuotaWeight: expected a positive number");
          q.weight = d;
        }
        q.quotas["*"] = quota;
      }
      for (const char* r : {"cpu", "memory"})
        if (At(spec, {"resources", r})) out.notes.push_back(Loc(o) + ": spec.resources." + r + " is not mapped (Berth's queues count GPUs)");
      Add(std::move(q), o.line, out);
    }
    return Status::Ok();
  }

  std::vector<Object> objects_;

 private:
  Status KueueQuotas(const Object& o, const std::map<std::string, std::string>& flavor_type, QueueSpec& q,
                     ImportedQueues& out) {
    const YAML::Node groups = At(o.node, {"spec", "resourceGroups"});
    if (!groups) return Status::Ok();
    if (!groups.IsSequence()) return Err(groups, Where(o), "spec.resourceGroups: expected a list");
    for (size_t g = 0; g < groups.size(); ++g) {
      const YAML::Node flavors = groups[g]["flavors"];
      if (!flavors || !flavors.IsSequence()) continue;
      for (size_t f = 0; f < flavors.size(); ++f) {
        const std::string fname = flavors[f]["name"] ? flavors[f]["name"].as<std::string>("") : "";
        const std::string at = "spec.resourceGroups[" + std::to_string(g) + "].flavors[" + std::to_string(f) + "]";
        const YAML::Node resources = flavors[f]["resources"];
        if (!resources || !resources.IsSequence()) continue;
        for (size_t r = 0; r < resources.size(); ++r) {
          const std::string rname = resources[r]["name"] ? resources[r]["name"].as<std::string>("") : "";
          const std::string rat = at + ".resources[" + std::to_string(r) + "]";
          if (!IsGpuResource(rname)) {
            out.notes.push_back(Loc(o) + ": " + rat + " (" + rname + ") is not mapped (Berth's queues count GPUs)");
            continue;
          }
          auto ft = flavor_type.find(fname);
          if (ft == flavor_type.end())
            return Err(flavors[f], Where(o), at + ": ResourceFlavor '" + fname + "' is not defined in the file");
          Quota& quota = q.quotas[ft->second];
          auto amount = [&](const char* key, int64_t* field) -> Status {
            const YAML::Node v = resources[r][key];
            if (!v) return Status::Ok();
            StatusOr<int64_t> milli = ParseK8sQuantity(v.as<std::string>(""), 1000);
            if (!milli.ok()) return Err(v, Where(o), rat + "." + key + ": " + milli.status().message());
            *field = *milli;
            return Status::Ok();
          };
          BERTH_RETURN_IF_ERROR(amount("nominalQuota", &quota.guarantee));
          BERTH_RETURN_IF_ERROR(amount("borrowingLimit", &quota.borrow_limit));
          BERTH_RETURN_IF_ERROR(amount("lendingLimit", &quota.lend_limit));
        }
      }
    }
    return Status::Ok();
  }

  // The GPUs of a resource map (nvidia.com/gpu: "8"), milli-GPU.
  Status GpuAmount(const YAML::Node& resources, const std::string& field, const Object& o, int64_t* milli, bool* found) {
    if (!resources || !resources.IsMap()) return Status::Ok();
    for (const char* g : kGpuResources) {
      const YAML::Node v = resources[g];
      if (!v) continue;
      StatusOr<int64_t> m = ParseK8sQuantity(v.as<std::string>(""), 1000);
      if (!m.ok()) return Err(v, Where(o), field + "." + g + ": " + m.status().message());
      *milli = *m;
      *found = true;
    }
    return Status::Ok();
  }

  void Add(QueueSpec q, int line, ImportedQueues& out) {
    out.file.queues.push_back(std::move(q));
    out.file.lines.push_back(line);
    out.file.quota_lines.emplace_back();
  }

  // "Queue team-a" / "LocalQueue ns/name"; Loc adds the file and the object's line.
  std::string Where(const Object& o) const { return o.kind + " " + (o.ns.empty() ? "" : o.ns + "/") + o.name; }
  std::string Loc(const Object& o) const { return source_ + ":" + std::to_string(o.line) + ": " + Where(o); }
  Status Err(const YAML::Node& n, const std::string& what, const std::string& msg) const {
    std::string where = source_;
    if (n && !n.Mark().is_null()) where += ":" + std::to_string(n.Mark().line + 1);
    return InvalidArgument(where + ": " + (what.empty() ? "" : what + ": ") + msg);
  }
  std::string source_;
};

std::string Gpus(int64_t milli) {
  if (milli % 1000 == 0) return std::to_string(milli / 1000);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(milli) / 1000.0);
  return buf;
}

std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::optional<QueueDialect> ParseQueueDialect(std::string_view name) {
  if (name == "kueue") return QueueDialect::kKueue;
  if (name == "volcano") return QueueDialect::kVolcano;
  if (name == "kai") return QueueDialect::kKai;
  return std::nullopt;
}

bool IsKubernetesObjects(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string line;
  bool api = false, kind = false;
  while (std::getline(in, line)) {
    api |= line.rfind("apiVersion:", 0) == 0;
    kind |= line.rfind("kind:", 0) == 0;
  }
  return api && kind;
}

StatusOr<ImportedQueues> ImportQueues(std::string_view text, std::string_view source,
                                      std::optional<QueueDialect> dialect) {
  Importer im{std::string(source)};
  ImportedQueues out;
  try {
    for (const YAML::Node& doc : YAML::LoadAll(std::string(text))) BERTH_RETURN_IF_ERROR(im.Collect(doc));
    BERTH_ASSIGN_OR_RETURN(out.dialect, im.Dialect(dialect));
    switch (out.dialect) {
      case QueueDialect::kKueue: BERTH_RETURN_IF_ERROR(im.Kueue(out)); break;
      case QueueDialect::kVolcano: BERTH_RETURN_IF_ERROR(im.Volcano(out)); break;
      case QueueDialect::kKai: BERTH_RETURN_IF_ERROR(im.Kai(out)); break;
    }
  } catch (const YAML::Exception& e) {
    std::string where(source);
    if (!e.mark.is_null()) where += ":" + std::to_string(e.mark.line + 1);
    return InvalidArgument(where + ": YAML: " + e.msg);
  }
  if (out.file.queues.empty()) return InvalidArgument(std::string(source) + ": no queues to import");
  // The result must be a valid Berth queue file: parse what it writes.
  const std::string yaml = QueueFileToYaml(out.file);
  StatusOr<QueueFile> check = ParseQueueYaml(yaml, std::string(source) + " (as imported)");
  if (!check.ok()) return check.status();
  out.file.lines = std::move(check->lines);
  out.file.quota_lines = std::move(check->quota_lines);
  return out;
}

std::string QueueFileToYaml(const QueueFile& file) {
  std::string out;
  if (file.has_half_life) out += "half_life: " + std::to_string(file.half_life / 1'000'000) + "s\n";
  out += "queues:\n";
  for (const QueueSpec& q : file.queues) {
    out += "  - name: " + Quoted(q.name) + "\n";
    if (!q.parent.empty()) out += "    parent: " + Quoted(q.parent) + "\n";
    if (q.weight != 1.0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", q.weight);
      out += "    weight: " + std::string(buf) + "\n";
    }
    if (!q.quotas.empty()) {
      out += "    quotas:\n";
      for (const auto& [type, quota] : q.quotas) {
        std::string fields = "guarantee: " + Gpus(quota.guarantee);
        if (quota.limit != kUnlimited) fields += ", limit: " + Gpus(quota.limit);
        if (quota.borrow_limit != kUnlimited) fields += ", borrow_limit: " + Gpus(quota.borrow_limit);
        if (quota.lend_limit != kUnlimited) fields += ", lend_limit: " + Gpus(quota.lend_limit);
        out += "      " + Quoted(type) + ": {" + fields + "}\n";
      }
    }
    if (!q.tenants.empty()) {
      out += "    tenants: [";
      for (size_t i = 0; i < q.tenants.size(); ++i) out += (i ? ", " : "") + Quoted(q.tenants[i]);
      out += "]\n";
    }
  }
  return out;
}

}  // namespace berth::tenancy
