// Reading queue trees from YAML. All yaml-cpp throws are caught in this file.
#include "berth/tenancy/queue_yaml.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "berth/common/csv.h"
#include "berth/tenancy/import/queue_import.h"

namespace berth::tenancy {
namespace {

constexpr double kMaxGpus = 1e9;  // a sanity bound on quota figures

class Parser {
 public:
  explicit Parser(std::string file) : file_(std::move(file)) {}

  StatusOr<QueueFile> Top(const YAML::Node& root);

 private:
  Status Error(const YAML::Node& at, const std::string& path, const std::string& msg) const {
    std::string where = file_;
    if (at.IsDefined()) where += ":" + std::to_string(at.Mark().line + 1);
    where += ": ";
    if (!path.empty()) where += path + ": ";
    return InvalidArgument(where + msg);
  }
  Status CheckKeys(const YAML::Node& map, const std::string& path, std::initializer_list<const char*> allowed) const;
  StatusOr<std::string> Scalar(const YAML::Node& v, const std::string& path) const;
  StatusOr<int64_t> Gpus(const YAML::Node& v, const std::string& path) const;
  Status Queue(const YAML::Node& e, const std::string& path, QueueFile& out);
  StatusOr<BudgetSpec> Budget(const YAML::Node& b, const std::string& path) const;
  StatusOr<int64_t> Milli(const YAML::Node& v, const std::string& path, const char* what) const;

  std::string file_;
};

Status Parser::CheckKeys(const YAML::Node& map, const std::string& path,
                         std::initializer_list<const char*> allowed) const {
  if (!map.IsMap()) return Error(map, path, "expected a map of keys");
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = it->first.Scalar();
    bool ok = false;
    std::string list;
    for (const char* a : allowed) {
      ok = ok || key == a;
      list += (list.empty() ? "" : ", ") + std::string(a);
    }
    if (!ok)
      return Error(it->first, path.empty() ? key : path + "." + key, "unknown key (expected one of: " + list + ")");
  }
  return Status::Ok();
}

StatusOr<std::string> Parser::Scalar(const YAML::Node& v, const std::string& path) const {
  if (!v.IsScalar()) return Error(v, path, "expected a single value");
  if (v.Scalar().empty()) return Error(v, path, "empty value");
  return v.Scalar();
}

StatusOr<int64_t> Parser::Gpus(const YAML::Node& v, const std::string& path) const {
  BERTH_ASSIGN_OR_RETURN(std::string text, Scalar(v, path));
  double gpus = 0;
  if (!ParseDouble(text, gpus).ok() || !std::isfinite(gpus))
    return Error(v, path, "expected a number of GPUs, got '" + text + "'");
  if (gpus < 0) return Error(v, path, "must not be negative");
  if (gpus > kMaxGpus) return Error(v, path, "too large");
  const double milli = gpus * kMilliPerGpu;
  if (std::abs(milli - std::round(milli)) > 1e-6)
    return Error(v, path, "at most three decimals (a thousandth of a GPU), got '" + text + "'");
  return static_cast<int64_t>(std::llround(milli));
}

// A non-negative number with at most three decimals, in thousandths.
StatusOr<int64_t> Parser::Milli(const YAML::Node& v, const std::string& path, const char* what) const {
  BERTH_ASSIGN_OR_RETURN(std::string text, Scalar(v, path));
  double x = 0;
  if (!ParseDouble(text, x).ok() || !std::isfinite(x))
    return Error(v, path, std::string("expected ") + what + ", got '" + text + "'");
  if (x < 0) return Error(v, path, "must not be negative");
  if (x > 1e12) return Error(v, path, "too large");
  const double milli = x * 1000;
  if (std::abs(milli - std::round(milli)) > 1e-6)
    return Error(v, path, "at most three decimals, got '" + text + "'");
  return static_cast<int64_t>(std::llround(milli));
}

StatusOr<BudgetSpec> Parser::Budget(const YAML::Node& b, const std::string& p) const {
  BERTH_RETURN_IF_ERROR(CheckKeys(b, p, {"gpu_hours", "money", "period", "when_spent"}));
  BudgetSpec out;
  const YAML::Node hours = b["gpu_hours"], money = b["money"];
  const bool has_hours = hours && !hours.IsNull(), has_money = money && !money.IsNull();
  if (has_hours == has_money) return Error(b, p, "give one of gpu_hours or money");
  out.money = has_money;
  BERTH_ASSIGN_OR_RETURN(const int64_t milli, Milli(has_money ? money : hours, p + (has_money ? ".money" : ".gpu_hours"),
                                                    has_money ? "an amount of money" : "a number of GPU-hours"));
  out.amount = milli * 1000;  // micro-units
  const YAML::Node period = b["period"];
  if (!period || period.IsNull()) return Error(b, p + ".period", "missing (day, week, month or a rolling window such as 24h)");
  BERTH_ASSIGN_OR_RETURN(std::string text, Scalar(period, p + ".period"));
  if (text == "day") {
    out.period = BudgetPeriod::kDay;
  } else if (text == "week") {
    out.period = BudgetPeriod::kWeek;
  } else if (text == "month") {
    out.period = BudgetPeriod::kMonth;
  } else {
    StatusOr<TimeUs> w = ParseQueueDuration(text);
    if (!w.ok()) return Error(period, p + ".period", "expected day, week, month or a rolling window such as 24h, got '" + text + "'");
    if (*w < 3600 * kUsPerSecond || *w > 366 * 86400 * kUsPerSecond)
      return Error(period, p + ".period", "a rolling window must be between 1h and 366d, got '" + text + "'");
    out.period = BudgetPeriod::kRolling;
    out.window = *w;
  }
  if (const YAML::Node w = b["when_spent"]; w && !w.IsNull()) {
    BERTH_ASSIGN_OR_RETURN(std::string mode, Scalar(w, p + ".when_spent"));
    if (mode == "wait") out.when_spent = WhenSpent::kWait;
    else if (mode == "idle") out.when_spent = WhenSpent::kIdle;
    else return Error(w, p + ".when_spent", "expected wait or idle, got '" + mode + "'");
  }
  return out;
}

Status Parser::Queue(const YAML::Node& e, const std::string& p, QueueFile& out) {
  BERTH_RETURN_IF_ERROR(CheckKeys(e, p, {"name", "parent", "weight", "quotas", "tenants", "budget", "overcommit"}));
  QueueSpec spec;
  if (!e["name"] || e["name"].IsNull()) return Error(e, p + ".name", "missing");
  BERTH_ASSIGN_OR_RETURN(spec.name, Scalar(e["name"], p + ".name"));
  if (spec.name == "*") return Error(e["name"], p + ".name", "'*' is reserved (it means all GPU types)");
  for (const auto& q : out.queues)
    if (q.name == spec.name) return Error(e["name"], p + ".name", "queue '" + spec.name + "' defined twice");
  if (const YAML::Node parent = e["parent"]; parent && !parent.IsNull()) {
    BERTH_ASSIGN_OR_RETURN(spec.parent, Scalar(parent, p + ".parent"));
  }
  if (spec.parent == spec.name) return Error(e["parent"], p + ".parent", "a queue cannot be its own parent");
  if (const YAML::Node w = e["weight"]; w && !w.IsNull()) {
    BERTH_ASSIGN_OR_RETURN(std::string text, Scalar(w, p + ".weight"));
    if (!ParseDouble(text, spec.weight).ok() || !std::isfinite(spec.weight))
      return Error(w, p + ".weight", "expected a number, got '" + text + "'");
    if (spec.weight <= 0) return Error(w, p + ".weight", "must be positive");
  }
  if (const YAML::Node quotas = e["quotas"]; quotas && !quotas.IsNull()) {
    if (!quotas.IsMap()) return Error(quotas, p + ".quotas", "expected a map of GPU type (or \"*\") -> quota");
    for (auto it = quotas.begin(); it != quotas.end(); ++it) {
      const std::string type = it->first.Scalar();
      const std::string qp = p + ".quotas." + type;
      if (type.empty()) return Error(it->first, qp, "empty GPU type (use \"*\" for all types)");
      if (spec.quotas.count(type)) return Error(it->first, qp, "quota given twice");
      BERTH_RETURN_IF_ERROR(CheckKeys(it->second, qp, {"guarantee", "limit", "borrow_limit", "lend_limit"}));
      Quota q;
      const struct {
        const char* key;
        int64_t* field;
      } fields[] = {{"guarantee", &q.guarantee}, {"limit", &q.limit}, {"borrow_limit", &q.borrow_limit},
                    {"lend_limit", &q.lend_limit}};
      for (const auto& f : fields) {
        const YAML::Node v = it->second[f.key];
        if (!v || v.IsNull()) continue;
        BERTH_ASSIGN_OR_RETURN(*f.field, Gpus(v, qp + "." + f.key));
      }
      if (q.limit != kUnlimited && q.limit < q.guarantee)
        return Error(it->second["limit"], qp + ".limit", "is below the guarantee");
      spec.quotas.emplace(type, q);
      out.quota_lines.resize(out.queues.size() + 1);
      out.quota_lines.back()[type] = it->first.Mark().line + 1;
    }
  }
  if (const YAML::Node tenants = e["tenants"]; tenants && !tenants.IsNull()) {
    if (!tenants.IsSequence()) return Error(tenants, p + ".tenants", "expected a list of tenant names");
    for (size_t i = 0; i < tenants.size(); ++i) {
      BERTH_ASSIGN_OR_RETURN(std::string t, Scalar(tenants[i], p + ".tenants[" + std::to_string(i) + "]"));
      spec.tenants.push_back(std::move(t));
    }
  }
  if (const YAML::Node b = e["budget"]; b && !b.IsNull()) {
    BERTH_ASSIGN_OR_RETURN(spec.budget, Budget(b, p + ".budget"));
  }
  if (const YAML::Node o = e["overcommit"]; o && !o.IsNull()) {
    BERTH_ASSIGN_OR_RETURN(std::string text, Scalar(o, p + ".overcommit"));
    double r = 0;
    if (!ParseDouble(text, r).ok() || !std::isfinite(r))
      return Error(o, p + ".overcommit", "expected a ratio in 0..1, got '" + text + "'");
    if (r < 0 || r > 1) return Error(o, p + ".overcommit", "must be a ratio in 0..1, got '" + text + "'");
    out.overcommit[spec.name] = r;
  }
  out.quota_lines.resize(out.queues.size() + 1);
  out.lines.push_back(e.Mark().line + 1);
  out.queues.push_back(std::move(spec));
  return Status::Ok();
}

StatusOr<QueueFile> Parser::Top(const YAML::Node& root) {
  if (!root.IsDefined() || root.IsNull()) return InvalidArgument(file_ + ":1: empty queue file (expected queues:)");
  BERTH_RETURN_IF_ERROR(CheckKeys(root, "", {"half_life", "unit", "reference", "queues", "prices", "entitlement",
                                             "entitlement_refresh"}));
  QueueFile out;
  if (const YAML::Node pr = root["prices"]; pr && !pr.IsNull()) {
    if (!pr.IsMap()) return Error(pr, "prices", "expected a map of GPU type -> price per GPU-hour");
    for (auto it = pr.begin(); it != pr.end(); ++it) {
      const std::string type = it->first.Scalar();
      if (type.empty()) return Error(it->first, "prices", "empty GPU type");
      if (out.prices.count(type)) return Error(it->first, "prices." + type, "given twice");
      BERTH_ASSIGN_OR_RETURN(const int64_t price, Milli(it->second, "prices." + type, "a price per GPU-hour"));
      out.prices[type] = price;
      out.price_lines[type] = it->first.Mark().line + 1;
    }
  }
  if (const YAML::Node u = root["unit"]; u && !u.IsNull()) {
    BERTH_ASSIGN_OR_RETURN(std::string text, Scalar(u, "unit"));
    StatusOr<Unit> unit = ParseUnit(text);
    if (!unit.ok()) return Error(u, "unit", unit.status().message());
    out.unit = *unit;
  }
  if (const YAML::Node r = root["reference"]; r && !r.IsNull()) {
    BERTH_ASSIGN_OR_RETURN(out.reference, Scalar(r, "reference"));
    out.reference_line = r.Mark().line + 1;
  }
  if (out.unit == Unit::kNormalized && out.reference.empty()) out.reference = "H100";
  if (const YAML::Node en = root["entitlement"]; en && !en.IsNull()) {
    BERTH_ASSIGN_OR_RETURN(std::string text, Scalar(en, "entitlement"));
    StatusOr<EntitlementMode> mode = ParseEntitlementMode(text);
    if (!mode.ok()) return Error(en, "entitlement", mode.status().message());
    out.entitlement = *mode;
  }
  if (const YAML::Node er = root["entitlement_refresh"]; er && !er.IsNull()) {
    BERTH_ASSIGN_OR_RETURN(std::string text, Scalar(er, "entitlement_refresh"));
    StatusOr<TimeUs> t = ParseQueueDuration(text);
    if (!t.ok()) return Error(er, "entitlement_refresh", t.status().message());
    out.entitlement_refresh = *t;
  }
  if (const YAML::Node h = root["half_life"]; h && !h.IsNull()) {
    BERTH_ASSIGN_OR_RETURN(std::string text, Scalar(h, "half_life"));
    StatusOr<TimeUs> t = ParseQueueDuration(text);
    if (!t.ok()) return Error(h, "half_life", t.status().message());
    out.half_life = *t;
    out.has_half_life = true;
  }
  const YAML::Node queues = root["queues"];
  if (!queues || queues.IsNull()) return Error(root, "queues", "missing");
  if (!queues.IsSequence()) return Error(queues, "queues", "expected a list of queues");
  if (queues.size() == 0) return Error(queues, "queues", "empty list");
  for (size_t i = 0; i < queues.size(); ++i)
    BERTH_RETURN_IF_ERROR(Queue(queues[i], "queues[" + std::to_string(i) + "]", out));
  // Parents must be defined (anywhere in the file).
  std::set<std::string> names;
  for (const auto& q : out.queues) names.insert(q.name);
  for (size_t i = 0; i < out.queues.size(); ++i) {
    const QueueSpec& q = out.queues[i];
    if (!q.parent.empty() && !names.count(q.parent))
      return Error(queues[i]["parent"], "queues[" + std::to_string(i) + "].parent",
                   "queue '" + q.parent + "' is not defined");
  }
  return out;
}

}  // namespace

StatusOr<TimeUs> ParseQueueDuration(std::string_view text) {
  double scale = 1;
  std::string_view number = text;
  if (!text.empty()) {
    switch (text.back()) {
      case 's': scale = 1; number.remove_suffix(1); break;
      case 'm': scale = 60; number.remove_suffix(1); break;
      case 'h': scale = 3600; number.remove_suffix(1); break;
      case 'd': scale = 86400; number.remove_suffix(1); break;
      default: break;
    }
  }
  double v = 0;
  if (number.empty() || !ParseDouble(number, v).ok() || !std::isfinite(v) || v < 0 || v * scale > 1e12)
    return InvalidArgument("expected a duration such as 90s, 30m, 6h or 2d, got '" + std::string(text) + "'");
  return SecondsToUs(v * scale);
}

StatusOr<QueueFile> ParseQueueYaml(std::string_view text, std::string_view source_name) {
  const std::string file(source_name);
  try {
    YAML::Node root = YAML::Load(std::string(text));
    Parser parser(file);
    return parser.Top(root);
  } catch (const YAML::Exception& e) {
    std::string where = file;
    if (!e.mark.is_null()) where += ":" + std::to_string(e.mark.line + 1);
    return InvalidArgument(where + ": YAML: " + e.msg);
  }
}

StatusOr<QueueFile> ReadQueueFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open queue file");
  std::ostringstream text;
  text << in.rdbuf();
  // Kueue, Volcano or KAI objects: imported by their apiVersion (docs/queues.md).
  if (IsKubernetesObjects(text.str())) {
    BERTH_ASSIGN_OR_RETURN(ImportedQueues imported, ImportQueues(text.str(), path));
    return std::move(imported.file);
  }
  return ParseQueueYaml(text.str(), path);
}

StatusOr<QueueTree> BuildQueueTree(const QueueFile& given, std::string_view source_name,
                                   const cluster::Cluster& cluster) {
  const std::string name(source_name);
  // GPU product names (Kubernetes labels, imported flavors) resolve to the cluster's type among their words.
  QueueFile file = given;
  for (auto& q : file.queues) {
    std::map<std::string, Quota> quotas;
    for (auto& [type, quota] : q.quotas) {
      std::string t = type;
      if (t != "*" && !cluster.FindGpuType(t)) {
        const std::string resolved = GpuTypeOfProductName(t, cluster);
        if (!resolved.empty() && !q.quotas.count(resolved)) t = resolved;
      }
      quotas.emplace(t, quota);
    }
    q.quotas = std::move(quotas);
  }
  // GPU types first: they have a line of their own.
  for (size_t i = 0; i < file.queues.size(); ++i) {
    for (const auto& [type, q] : file.queues[i].quotas) {
      if (type == "*" || cluster.FindGpuType(type)) continue;
      int line = i < file.lines.size() ? file.lines[i] : 0;
      if (i < file.quota_lines.size()) {
        auto it = file.quota_lines[i].find(type);
        if (it != file.quota_lines[i].end()) line = it->second;
      }
      std::string known;
      for (const auto& t : cluster.gpu_types()) known += (known.empty() ? "" : ", ") + t.name;
      return InvalidArgument(name + ":" + std::to_string(line) + ": queues[" + std::to_string(i) + "].quotas." + type +
                             ": the cluster has no GPU type '" + type + "' (it has: " + known + "; or use \"*\")");
    }
  }
  for (const auto& [type, line] : file.price_lines) {
    if (cluster.FindGpuType(type) || !GpuTypeOfProductName(type, cluster).empty()) continue;
    std::string known;
    for (const auto& t : cluster.gpu_types()) known += (known.empty() ? "" : ", ") + t.name;
    return InvalidArgument(name + ":" + std::to_string(line) + ": prices." + type + ": the cluster has no GPU type '" +
                           type + "' (it has: " + known + ")");
  }
  StatusOr<QueueTree> tree = QueueTree::Create(file.queues, cluster);
  if (tree.ok()) {
    tree->set_unit(file.unit, file.reference);
    tree->set_entitlement(file.entitlement, file.entitlement_refresh);
    std::map<std::string, int64_t> prices;
    for (const auto& [type, price] : file.prices) {
      const std::string resolved = cluster.FindGpuType(type) ? type : GpuTypeOfProductName(type, cluster);
      prices.emplace(resolved, price);
    }
    tree->AddPrices(prices);
    return tree;
  }
  // Create names the queue ("queue 'x': ..."): point at its line.
  const std::string& msg = tree.status().message();
  for (size_t i = 0; i < file.queues.size() && i < file.lines.size(); ++i) {
    if (msg.rfind("queue '" + file.queues[i].name + "'", 0) == 0)
      return InvalidArgument(name + ":" + std::to_string(file.lines[i]) + ": " + msg);
  }
  return InvalidArgument(name + ": " + msg);
}

QueueFile QuotasForCluster(const QueueFile& given, const cluster::Cluster& cluster, std::vector<std::string>* dropped) {
  QueueFile file = given;
  for (auto& q : file.queues) {
    for (auto it = q.quotas.begin(); it != q.quotas.end();) {
      const std::string& type = it->first;
      if (type == "*" || cluster.FindGpuType(type) || !GpuTypeOfProductName(type, cluster).empty()) {
        ++it;
        continue;
      }
      if (dropped && std::find(dropped->begin(), dropped->end(), type) == dropped->end()) dropped->push_back(type);
      it = q.quotas.erase(it);
    }
  }
  return file;
}

StatusOr<QueueTree> LoadQueueTree(const std::string& path, const cluster::Cluster& cluster) {
  BERTH_ASSIGN_OR_RETURN(QueueFile file, ReadQueueFile(path));
  return BuildQueueTree(file, path, cluster);
}

}  // namespace berth::tenancy
