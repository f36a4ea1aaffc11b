// The service keys of a job document.
#include "berth/json/service_fields.h"

#include <cmath>

namespace berth::json {
namespace {

using nlohmann::json;

std::string Shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

Status Count(const std::string& key, const json& v, int32_t lo, std::optional<int32_t>& out) {
  if (!v.is_number_integer()) return InvalidArgument(key + ": expected an integer, found " + Shown(v));
  const int64_t n = v.is_number_unsigned() && v.get<uint64_t>() > 100000 ? 100001 : v.get<int64_t>();
  if (n < lo || n > 100000)
    return InvalidArgument(key + ": " + Shown(v) + " is outside " + std::to_string(lo) + "..100000");
  out = static_cast<int32_t>(n);
  return Status::Ok();
}

// A rate in requests/s (> 0, at most 1e9) as milli-requests/s.
Status Rate(const std::string& key, const json& v, int64_t& out) {
  if (!v.is_number()) return InvalidArgument(key + ": expected a number of requests/s, found " + Shown(v));
  const double r = v.get<double>();
  if (!std::isfinite(r) || r <= 0 || r > 1e9) return InvalidArgument(key + ": " + Shown(v) + " is out of range (0, 1e9]");
  out = std::max<int64_t>(1, std::llround(r * 1000));
  return Status::Ok();
}

Status Limit(const std::string& key, const json& v, int32_t& out) {
  std::optional<int32_t> n;
  BERTH_RETURN_IF_ERROR(Count(key, v, 0, n));
  out = *n;
  return Status::Ok();
}

}  // namespace

bool ServiceFields::Handles(const std::string& key) {
  return key == "kind" || key == "replicas" || key == "min_replicas" || key == "max_replicas" ||
         key == "latency_class" || key == "target" || key == "spread";
}

Status ServiceFields::Parse(const std::string& key, const json& v) {
  if (key == "kind") {
    if (!v.is_string()) return InvalidArgument("kind: expected \"batch\" or \"service\", found " + Shown(v));
    const std::string k = v.get<std::string>();
    if (k != "batch" && k != "service") return InvalidArgument("kind: '" + k + "' is not batch or service");
    service_ = k == "service";
    return Status::Ok();
  }
  if (first_key_.empty()) first_key_ = key;
  if (key == "replicas") return Count(key, v, 0, replicas_);
  if (key == "min_replicas") return Count(key, v, 0, min_);
  if (key == "max_replicas") return Count(key, v, 1, max_);
  if (key == "latency_class") {
    if (!v.is_string() || !job::ParseLatencyClass(v.get<std::string>(), spec_.latency_class))
      return InvalidArgument("latency_class: expected \"critical\" or \"standard\", found " + Shown(v));
    return Status::Ok();
  }
  if (key == "target") {
    if (!v.is_object()) return InvalidArgument("target: expected an object, found " + Shown(v));
    for (const auto& [k, val] : v.items()) {
      const std::string kk = "target." + k;
      if (k == "requests_per_s") {
        BERTH_RETURN_IF_ERROR(Rate(kk, val, spec_.target_milli_rps));
      } else if (k == "capacity_per_replica") {
        BERTH_RETURN_IF_ERROR(Rate(kk, val, spec_.capacity_milli_rps));
      } else if (k == "utilization") {
        if (!val.is_number()) return InvalidArgument(kk + ": expected a fraction in (0, 1], found " + Shown(val));
        const double u = val.get<double>();
        if (!std::isfinite(u) || u <= 0 || u > 1) return InvalidArgument(kk + ": " + Shown(val) + " is outside (0, 1]");
        spec_.target_utilization_pct = std::max(1, static_cast<int32_t>(std::lround(u * 100)));
      } else {
        return InvalidArgument("unknown field '" + kk + "' (requests_per_s, utilization, capacity_per_replica)");
      }
    }
    return Status::Ok();
  }
  if (key == "spread") {
    if (!v.is_object()) return InvalidArgument("spread: expected an object, found " + Shown(v));
    for (const auto& [k, val] : v.items()) {
      if (k == "max_per_node") {
        BERTH_RETURN_IF_ERROR(Limit("spread." + k, val, spec_.max_per_node));
      } else if (k == "max_per_leaf") {
        BERTH_RETURN_IF_ERROR(Limit("spread." + k, val, spec_.max_per_leaf));
      } else {
        return InvalidArgument("unknown field 'spread." + k + "' (max_per_node, max_per_leaf)");
      }
    }
    return Status::Ok();
  }
  return InvalidArgument("unknown field '" + key + "'");
}

Status ServiceFields::Finish(job::JobSpec& spec) const {
  if (!service_) {
    if (!first_key_.empty())
      return InvalidArgument(first_key_ + ": only for \"kind\": \"service\" (a batch job runs its groups as given)");
    return Status::Ok();
  }
  job::ServiceSpec s = spec_;
  s.replicas = replicas_ ? *replicas_ : (min_ ? std::max(*min_, 1) : 1);
  if (max_ && !replicas_) s.replicas = std::min(s.replicas, *max_);
  s.min_replicas = min_ ? *min_ : s.replicas;
  s.max_replicas = max_ ? *max_ : std::max(s.replicas, 1);
  spec.service = s;
  return job::ValidateService(s, "service '" + spec.name + "'");
}

namespace {
template <typename J>
void Write(const job::JobSpec& spec, J& out) {
  if (!spec.service) return;
  const job::ServiceSpec& s = *spec.service;
  out["kind"] = "service";
  out["replicas"] = s.replicas;
  out["min_replicas"] = s.min_replicas;
  out["max_replicas"] = s.max_replicas;
  if (s.latency_class != job::LatencyClass::kStandard) out["latency_class"] = job::LatencyClassName(s.latency_class);
  J target = J::object();
  if (s.target_milli_rps > 0) target["requests_per_s"] = static_cast<double>(s.target_milli_rps) / 1000.0;
  if (s.target_utilization_pct > 0) target["utilization"] = s.target_utilization_pct / 100.0;
  if (s.capacity_milli_rps > 0) target["capacity_per_replica"] = static_cast<double>(s.capacity_milli_rps) / 1000.0;
  if (!target.empty()) out["target"] = std::move(target);
  J spread = J::object();
  if (s.max_per_node > 0) spread["max_per_node"] = s.max_per_node;
  if (s.max_per_leaf > 0) spread["max_per_leaf"] = s.max_per_leaf;
  if (!spread.empty()) out["spread"] = std::move(spread);
}
}  // namespace

void ServiceToJson(const job::JobSpec& spec, nlohmann::json& out) { Write(spec, out); }
void ServiceToJson(const job::JobSpec& spec, nlohmann::ordered_json& out) { Write(spec, out); }

}  // namespace berth::json
