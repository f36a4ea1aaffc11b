// KubeScheduler: Deployments sized by Berth's autoscaler (kube_autoscale.h):
// the Deployments watch, one workload::Autoscaler per opted-in Deployment fed
// by load reports (POST /v1/services/NS/NAME/load, or the annotation
// berth.dev/load-requests-per-s), and the count it wants written through the
// scale subresource.
#include "berth/kubesched/kube_autoscale.h"

#include <charconv>
#include <cmath>

#include "berth/kubesched/kube_scheduler.h"
#include "berth/kubesched/kube_util.h"
#include "berth/server/job_json.h"

namespace berth::kube {

using nlohmann::json;

namespace {

constexpr const char* kAutoscale = "berth.dev/autoscale";
constexpr const char* kMinReplicas = "berth.dev/min-replicas";
constexpr const char* kMaxReplicas = "berth.dev/max-replicas";
constexpr const char* kTargetRps = "berth.dev/target-requests-per-s";
constexpr const char* kTargetUtilization = "berth.dev/target-utilization";
constexpr const char* kCapacity = "berth.dev/capacity-per-replica";
constexpr const char* kLoad = "berth.dev/load-requests-per-s";
constexpr const char* kUpStabilization = "berth.dev/scale-up-stabilization-s";
constexpr const char* kDownStabilization = "berth.dev/scale-down-stabilization-s";

struct Annotations {
  const json* map = nullptr;
  std::string who;  // "Deployment NS/NAME"

  const std::string* Find(const char* key, std::string& holder) const {
    if (!map || !map->is_object()) return nullptr;
    auto it = map->find(key);
    if (it == map->end() || !it->is_string()) return nullptr;
    holder = it->get<std::string>();
    return &holder;
  }
  Status Bad(const char* key, const std::string& expected, const std::string& found) const {
    return InvalidArgument(who + ": annotation " + key + ": expected " + expected + ", found '" + found.substr(0, 64) +
                           "'");
  }
  // An integer in lo..100000; `out` stays when the annotation is absent.
  Status Count(const char* key, int32_t lo, int32_t& out, bool& present) const {
    std::string v;
    present = Find(key, v) != nullptr;
    if (!present) return Status::Ok();
    int32_t n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < lo || n > 100'000)
      return Bad(key, "an integer in " + std::to_string(lo) + "..100000", v);
    out = n;
    return Status::Ok();
  }
  // Whole seconds in 0..3600 (HPA's bound on a stabilization window).
  Status Window(const char* key, std::optional<TimeUs>& out) const {
    std::string v;
    if (!Find(key, v)) return Status::Ok();
    int32_t n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < 0 || n > 3600)
      return Bad(key, "whole seconds in 0..3600", v);
    out = SecondsToUs(n);
    return Status::Ok();
  }
  // A number in [0, hi] (requests/s, or a fraction), as thousandths.
  Status Milli(const char* key, double hi, const char* range, std::optional<int64_t>& out) const {
    std::string v;
    if (!Find(key, v)) return Status::Ok();
    double d = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
    if (ec != std::errc() || end != v.data() + v.size() || !std::isfinite(d) || d < 0 || d > hi)
      return Bad(key, range, v);
    out = std::llround(d * 1000);
    return Status::Ok();
  }
};

KubeScheduler::Answer NoAutoscaledDeployment(const std::string& key) {
  return {404, {{"error", "no autoscaled Deployment " + key + " (annotation berth.dev/autoscale: \"true\")"}}};
}

}  // namespace

std::string DeploymentScalePath(const std::string& ns, const std::string& name) {
  return "/apis/apps/v1/namespaces/" + ns + "/deployments/" + name + "/scale";
}

StatusOr<DeploymentScaling> ParseDeploymentScaling(const json& deployment) {
  const json& md = Sub(deployment, "metadata");
  Annotations a{&Sub(md, "annotations"), "Deployment " + Str(md, "namespace") + "/" + Str(md, "name")};
  DeploymentScaling out;
  const json& replicas = Sub(Sub(deployment, "spec"), "replicas");
  if (replicas.is_number_integer()) out.replicas = std::max<int32_t>(0, replicas.get<int32_t>());
  std::string flag;
  if (!a.Find(kAutoscale, flag) || flag == "false") return out;
  if (flag != "true") return a.Bad(kAutoscale, "\"true\" or \"false\"", flag);
  out.enabled = true;
  job::ServiceSpec& s = out.service;
  bool has_min = false, has_max = false;
  s.min_replicas = 1;
  BERTH_RETURN_IF_ERROR(a.Count(kMinReplicas, 0, s.min_replicas, has_min));
  BERTH_RETURN_IF_ERROR(a.Count(kMaxReplicas, 1, s.max_replicas, has_max));
  if (!has_max) return InvalidArgument(a.who + ": annotation " + kMaxReplicas + " is required with " + kAutoscale);
  if (s.min_replicas > s.max_replicas)
    return InvalidArgument(a.who + ": annotation " + kMinReplicas + " " + std::to_string(s.min_replicas) +
                           " is above " + kMaxReplicas + " " + std::to_string(s.max_replicas));
  std::optional<int64_t> target, utilization, capacity;
  BERTH_RETURN_IF_ERROR(a.Milli(kTargetRps, 1e9, "a number in 0..1e9 (requests/s)", target));
  BERTH_RETURN_IF_ERROR(a.Milli(kTargetUtilization, 1, "a number in 0..1", utilization));
  BERTH_RETURN_IF_ERROR(a.Milli(kCapacity, 1e9, "a number in 0..1e9 (requests/s)", capacity));
  BERTH_RETURN_IF_ERROR(a.Milli(kLoad, 1e9, "a number in 0..1e9 (requests/s)", out.load_milli_rps));
  BERTH_RETURN_IF_ERROR(a.Window(kUpStabilization, out.up_stabilization));
  BERTH_RETURN_IF_ERROR(a.Window(kDownStabilization, out.down_stabilization));
  if (target && utilization)
    return InvalidArgument(a.who + ": give annotation " + kTargetRps + " or " + kTargetUtilization + ", not both");
  if (target) {
    if (*target <= 0) return InvalidArgument(a.who + ": annotation " + kTargetRps + ": expected a number above 0");
    s.target_milli_rps = *target;
  } else if (utilization) {
    if (*utilization <= 0)
      return InvalidArgument(a.who + ": annotation " + kTargetUtilization + ": expected a number in (0, 1]");
    if (!capacity || *capacity <= 0)
      return InvalidArgument(a.who + ": annotation " + kTargetUtilization + " needs " + kCapacity +
                             " (requests/s one replica serves at most)");
    s.target_utilization_pct = std::max<int32_t>(1, static_cast<int32_t>((*utilization + 5) / 10));
    s.capacity_milli_rps = *capacity;
  } else {
    return InvalidArgument(a.who + ": annotation " + kAutoscale + " needs " + kTargetRps + " or " +
                           kTargetUtilization);
  }
  s.replicas = std::clamp(out.replicas, s.min_replicas, s.max_replicas);
  BERTH_RETURN_IF_ERROR(job::ValidateService(s, a.who));
  return out;
}

// ---------------------------------------------------------------- the loop's side

void KubeScheduler::OnDeployment(const std::string& type, const json& obj) {
  const json& md = Sub(obj, "metadata");
  const std::string ns = Str(md, "namespace"), name = Str(md, "name");
  if (ns.empty() || name.empty()) return;
  const std::string key = ns + "/" + name;
  auto it = deployments_.find(key);
  if (type == "DELETED") {
    if (it != deployments_.end()) deployments_.erase(it);
    return;
  }
  StatusOr<DeploymentScaling> parsed = ParseDeploymentScaling(obj);
  if (parsed.ok() && !parsed->enabled) {
    if (it != deployments_.end()) {
      log_.Info("kube_autoscale_off", {{"deployment", key}});
      deployments_.erase(it);
    }
    return;
  }
  const bool added = it == deployments_.end();
  if (added) it = deployments_.emplace(key, ScaledDeployment{}).first;
  ScaledDeployment& d = it->second;
  d.ns = ns;
  d.name = name;
  if (!parsed.ok()) {
    if (d.error != parsed.status().message())
      log_.Warn("kube_autoscale_invalid", {{"deployment", key}, {"error", parsed.status().message()}});
    d.error = parsed.status().message();
    d.autoscaler.reset();  // the count stays as it is until the annotations read
    const json& replicas = Sub(Sub(obj, "spec"), "replicas");
    d.replicas = replicas.is_number_integer() ? replicas.get<int32_t>() : 1;
    return;
  }
  d.error.clear();
  d.replicas = parsed->replicas;
  const job::ServiceSpec& s = parsed->service;
  workload::AutoscalerOptions ao = options_.autoscaler;
  if (parsed->up_stabilization) ao.up_stabilization = *parsed->up_stabilization;
  if (parsed->down_stabilization) ao.down_stabilization = *parsed->down_stabilization;
  const bool same = d.autoscaler && d.spec.min_replicas == s.min_replicas && d.spec.max_replicas == s.max_replicas &&
                    d.spec.target_milli_rps == s.target_milli_rps &&
                    d.spec.target_utilization_pct == s.target_utilization_pct &&
                    d.spec.capacity_milli_rps == s.capacity_milli_rps &&
                    d.autoscaler->options().up_stabilization == ao.up_stabilization &&
                    d.autoscaler->options().down_stabilization == ao.down_stabilization;
  const TimeUs now = clock_.Now();
  if (!same) {  // new limits, target or windows: a new autoscaler, told the last load
    d.spec = s;
    d.autoscaler = std::make_unique<workload::Autoscaler>(s, ao);
    if (d.load_milli_rps >= 0) d.autoscaler->Observe(now, d.load_milli_rps);
    log_.Info("kube_autoscale", {{"deployment", key}, {"min_replicas", s.min_replicas},
                                 {"max_replicas", s.max_replicas}, {"replicas", d.replicas}});
  }
  // The annotation's load, when it changed (a report through the API may be newer).
  if (parsed->load_milli_rps && *parsed->load_milli_rps != d.annotation_load) {
    d.annotation_load = *parsed->load_milli_rps;
    d.load_milli_rps = d.annotation_load;
    d.load_source = "annotation";
    d.autoscaler->Observe(now, d.load_milli_rps);
  }
}

void KubeScheduler::AutoscaleTick() {
  const TimeUs now = clock_.Now();
  for (auto& [key, d] : deployments_) {
    if (!d.autoscaler || d.scaling || now < d.autoscaler->next_evaluation()) continue;
    const int32_t current = d.replicas;
    const int32_t wanted = d.autoscaler->Evaluate(now, current);
    if (wanted == current) continue;
    d.scaling = true;
    WriteOp op = WriteOp::Make(WriteOp::Kind::kScale, d.ns, d.name, "");
    op.replicas = wanted;
    Enqueue(std::move(op));
    log_.Info("kube_autoscaled", {{"deployment", key}, {"from", current}, {"to", wanted},
                                  {"requests_per_s", static_cast<double>(d.autoscaler->scaled_load()) / 1000.0}});
  }
}

void KubeScheduler::OnScaleDone(const WriteOp& op, const Status& s) {
  auto it = deployments_.find(op.ns + "/" + op.name);
  if (it == deployments_.end()) return;
  ScaledDeployment& d = it->second;
  d.scaling = false;
  if (s.ok()) {
    ++d.scale_writes;
    ++scale_writes_;
    d.replicas = op.replicas;  // the watch confirms it
    return;
  }
  ++scale_failures_;
  log_.Warn("kube_scale_failed", {{"deployment", op.ns + "/" + op.name}, {"replicas", op.replicas},
                                  {"error", s.message()}});
}

// What a service (an autoscaled Deployment) looks like in /v1/services.
json KubeScheduler::ServiceView(const ScaledDeployment& d, int32_t bound, int32_t waiting) const {
  json v = {{"service", d.ns + "/" + d.name}, {"namespace", d.ns}, {"name", d.name}, {"replicas", d.replicas},
            {"pods_bound", bound}, {"pods_waiting", waiting}, {"scale_writes", d.scale_writes}};
  if (!d.error.empty()) {
    v["error"] = d.error;
    return v;
  }
  v["min_replicas"] = d.spec.min_replicas;
  v["max_replicas"] = d.spec.max_replicas;
  if (d.spec.target_milli_rps > 0) v["target_requests_per_s"] = static_cast<double>(d.spec.target_milli_rps) / 1000.0;
  if (d.spec.target_utilization_pct > 0) {
    v["target_utilization"] = d.spec.target_utilization_pct / 100.0;
    v["capacity_per_replica"] = static_cast<double>(d.spec.capacity_milli_rps) / 1000.0;
  }
  if (d.load_milli_rps >= 0) {
    v["requests_per_s"] = static_cast<double>(d.load_milli_rps) / 1000.0;
    v["load_source"] = d.load_source;
  }
  return v;
}

json KubeScheduler::ServicesJson() {
  json out = json::array();
  Sync([&] {
    std::map<std::string, std::pair<int32_t, int32_t>> pods;  // service -> bound, waiting
    for (const auto& [id, job] : jobs_)
      if (!job.service.empty()) ++(job.running ? pods[job.service].first : pods[job.service].second);
    for (const auto& [key, d] : deployments_) {
      const auto p = pods.find(key);
      out.push_back(ServiceView(d, p == pods.end() ? 0 : p->second.first, p == pods.end() ? 0 : p->second.second));
    }
  });
  return out;
}

KubeScheduler::Answer KubeScheduler::OnScaledDeployment(
    const std::string& ns, const std::string& name, const std::function<Answer(const std::string&, ScaledDeployment&)>& fn) {
  Answer a{503, {{"error", "the scheduling loop did not answer in time"}}};
  Sync([&] {
    const std::string key = ns + "/" + name;
    auto it = deployments_.find(key);
    a = it == deployments_.end() ? NoAutoscaledDeployment(key) : fn(key, it->second);
  });
  return a;
}

KubeScheduler::Answer KubeScheduler::GetService(const std::string& ns, const std::string& name) {
  return OnScaledDeployment(ns, name, [this](const std::string& key, ScaledDeployment& d) -> Answer {
    int32_t bound = 0, waiting = 0;
    for (const auto& [id, job] : jobs_)
      if (job.service == key) ++(job.running ? bound : waiting);
    return {200, ServiceView(d, bound, waiting)};
  });
}

KubeScheduler::Answer KubeScheduler::ReportServiceLoad(const std::string& ns, const std::string& name,
                                                       const std::string& body) {
  StatusOr<int64_t> milli = server::ParseLoadReport(body);
  if (!milli.ok()) return {400, {{"error", milli.status().message()}}};
  return OnScaledDeployment(ns, name, [this, m = *milli](const std::string& key, ScaledDeployment& d) -> Answer {
    if (!d.autoscaler) return {409, {{"error", d.error}}};
    d.load_milli_rps = m;
    d.load_source = "report";
    d.autoscaler->Observe(clock_.Now(), m);
    return {200, {{"service", key}, {"requests_per_s", static_cast<double>(m) / 1000.0}}};
  });
}

}  // namespace berth::kube
