// Queue objects as a queue tree, and the speeds of a tree in normalized units
// (kube_queues.h).
#include "berth/kubesched/kube_queues.h"

#include <utility>

#include "berth/hetero/ledger_speeds.h"
#include "berth/tenancy/units.h"

namespace berth::kube {

using nlohmann::json;

namespace {

// One setting of the whole tree (`unit`, `reference`) from the objects that
// give it: "" when none does; an error when two disagree.
StatusOr<std::string> TreeSetting(const std::map<std::string, json>& specs, const char* key, std::string* from) {
  std::string value;
  for (const auto& [name, spec] : specs) {
    if (!spec.contains(key) || spec[key].is_null()) continue;
    if (!spec[key].is_string() || spec[key].get<std::string>().empty())
      return InvalidArgument("Queue " + name + ": spec." + key + ": expected a non-empty string");
    const std::string v = spec[key].get<std::string>();
    if (!value.empty() && v != value)
      return InvalidArgument("Queue " + name + ": spec." + key + " is '" + v + "' but Queue " + *from + " says '" +
                             value + "' (one " + key + " for the whole tree)");
    if (value.empty()) value = v, *from = name;
  }
  return value;
}

}  // namespace

StatusOr<std::shared_ptr<const tenancy::QueueTree>> TreeFromQueueObjects(const std::map<std::string, json>& specs,
                                                                        const tenancy::QueueFile* file,
                                                                        const cluster::Cluster& c) {
  json doc = {{"queues", json::array()}};
  std::string unit_from, reference_from;
  BERTH_ASSIGN_OR_RETURN(std::string unit, TreeSetting(specs, "unit", &unit_from));
  BERTH_ASSIGN_OR_RETURN(std::string reference, TreeSetting(specs, "reference", &reference_from));
  if (!unit.empty()) {
    if (!tenancy::ParseUnit(unit).ok())
      return InvalidArgument("Queue " + unit_from + ": spec.unit: expected gpus or normalized, found '" + unit + "'");
  } else if (file) {
    unit = tenancy::UnitName(file->unit);
  }
  if (reference.empty() && file && !file->reference.empty()) reference = file->reference;
  if (!unit.empty()) doc["unit"] = unit;
  if (!reference.empty()) doc["reference"] = reference;
  for (const auto& [name, spec] : specs) {
    json q = {{"name", name}};
    if (spec.contains("parent") && spec["parent"].is_string() && !spec["parent"].get<std::string>().empty())
      q["parent"] = spec["parent"];
    if (spec.contains("weight")) q["weight"] = spec["weight"];
    if (spec.contains("tenants")) q["tenants"] = spec["tenants"];
    if (spec.contains("quotas") && spec["quotas"].is_object()) {
      json quotas = json::object();
      for (const auto& [type, quota] : spec["quotas"].items()) {
        json out = json::object();
        if (!quota.is_object()) return InvalidArgument("Queue " + name + ": spec.quotas." + type + ": expected an object");
        for (const auto& [k, v] : quota.items()) {
          const std::string key = k == "borrowLimit" ? "borrow_limit" : k == "lendLimit" ? "lend_limit" : k;
          out[key] = v;
        }
        quotas[type] = out;
      }
      q["quotas"] = quotas;
    }
    doc["queues"].push_back(q);
  }
  const std::string text = doc.dump(2);
  BERTH_ASSIGN_OR_RETURN(tenancy::QueueFile parsed, tenancy::ParseQueueYaml(text, "Queue objects"));
  BERTH_ASSIGN_OR_RETURN(tenancy::QueueTree tree, tenancy::BuildQueueTree(parsed, "Queue objects", c));
  return std::shared_ptr<const tenancy::QueueTree>(std::make_shared<tenancy::QueueTree>(std::move(tree)));
}

Status SetQueueCharging(std::shared_ptr<const tenancy::QueueTree> tree, const std::string& catalog,
                        const std::string& throughputs, const cluster::Cluster& c, scheduler::SchedulerOptions& so) {
  so.queues = std::move(tree);
  so.speeds = nullptr;
  if (!so.queues) return Status::Ok();
  BERTH_ASSIGN_OR_RETURN(so.speeds, hetero::SpeedsForTree(*so.queues, catalog, throughputs, c));
  return Status::Ok();
}

}  // namespace berth::kube
