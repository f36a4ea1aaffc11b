// LeaseElector (see lease.h).
#include "berth/kubesched/lease.h"

#include "berth/kubesched/kube_util.h"

namespace berth::kube {

using nlohmann::json;

LeaseElector::LeaseElector(KubeClient& client, LeaseOptions options) : client_(client), options_(std::move(options)) {}

LeaseElector::~LeaseElector() {
  stop_ = true;
  if (renewer_.joinable()) renewer_.join();
}

std::string LeaseElector::holder() const {
  std::lock_guard<std::mutex> lock(mu_);
  return holder_;
}

StatusOr<bool> LeaseElector::TryAcquireOrRenew() {
  const std::string base = "/apis/coordination.k8s.io/v1/namespaces/" + options_.ns + "/leases";
  const std::string path = base + "/" + options_.name;
  const int duration_s = static_cast<int>(std::max<int64_t>(1, options_.lease_duration.count() / 1000));
  auto current = client_.Get(path);
  const std::string now = NowRfc3339(/*micro=*/true);
  if (!current.ok()) {
    if (current.status().code() != StatusCode::kNotFound) return current.status();
    json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", options_.name}, {"namespace", options_.ns}}},
                  {"spec",
                   {{"holderIdentity", options_.identity},
                    {"leaseDurationSeconds", duration_s},
                    {"acquireTime", now},
                    {"renewTime", now},
                    {"leaseTransitions", 0}}}};
    auto created = client_.Post(base, lease);
    if (!created.ok()) {
      if (created.status().code() == StatusCode::kAlreadyExists) return false;
      return created.status();
    }
    std::lock_guard<std::mutex> lock(mu_);
    holder_ = options_.identity;
    return true;
  }
  json lease = *current;
  json spec = lease.contains("spec") && lease["spec"].is_object() ? lease["spec"] : json::object();
  const std::string holder = spec.value("holderIdentity", "");
  const std::string record = holder + "|" + spec.value("renewTime", "");
  const auto steady_now = std::chrono::steady_clock::now();
  bool expired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (record != observed_record_) {
      observed_record_ = record;
      observed_at_ = steady_now;
    }
    holder_ = holder;
    expired = holder.empty() || steady_now - observed_at_ > options_.lease_duration;
  }
  if (holder != options_.identity && !expired) return false;
  if (holder != options_.identity) {
    spec["acquireTime"] = now;
    spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
  }
  spec["holderIdentity"] = options_.identity;
  spec["leaseDurationSeconds"] = duration_s;
  spec["renewTime"] = now;
  lease["spec"] = spec;  // metadata.resourceVersion is kept: a concurrent writer makes this a 409
  auto updated = client_.Put(path, lease);
  if (!updated.ok()) {
    if (updated.status().code() == StatusCode::kAlreadyExists || updated.status().code() == StatusCode::kFailedPrecondition)
      return false;  // 409 Conflict: someone else wrote first
    return updated.status();
  }
  std::lock_guard<std::mutex> lock(mu_);
  holder_ = options_.identity;
  observed_record_ = options_.identity + "|" + now;
  observed_at_ = steady_now;
  return true;
}

Status LeaseElector::Campaign(const std::atomic<bool>& stop) {
  while (!stop) {
    auto r = TryAcquireOrRenew();
    if (r.ok() && *r) {
      leading_ = true;
      return Status::Ok();
    }
    const auto until = std::chrono::steady_clock::now() + options_.retry;
    while (!stop && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Unavailable("stopped before leading");
}

void LeaseElector::KeepLeading(std::function<void(const std::string& why)> on_lost) {
  renewer_ = std::thread([this, on_lost = std::move(on_lost)] {
    auto last_ok = std::chrono::steady_clock::now();
    while (!stop_ && leading_) {
      const auto until = std::chrono::steady_clock::now() + options_.retry;
      while (!stop_ && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (stop_) break;
      auto r = TryAcquireOrRenew();
      if (r.ok() && *r) {
        last_ok = std::chrono::steady_clock::now();
        continue;
      }
      const bool other = r.ok() && !*r && holder() != options_.identity && !holder().empty();
      if (other || std::chrono::steady_clock::now() - last_ok > options_.renew_deadline) {
        leading_ = false;
        on_lost(other ? "the lease is held by " + holder()
                      : "could not renew the lease: " + (r.ok() ? std::string("conflict") : r.status().message()));
        return;
      }
    }
  });
}

void LeaseElector::Resign() {
  stop_ = true;
  if (renewer_.joinable()) renewer_.join();
  if (!leading_.exchange(false)) return;
  const std::string path =
      "/apis/coordination.k8s.io/v1/namespaces/" + options_.ns + "/leases/" + options_.name;
  auto current = client_.Get(path);
  if (!current.ok()) return;
  json lease = *current;
  if (!lease.contains("spec") || lease["spec"].value("holderIdentity", "") != options_.identity) return;
  lease["spec"]["holderIdentity"] = "";
  lease["spec"]["renewTime"] = NowRfc3339(/*micro=*/true);
  (void)client_.Put(path, lease);
}

}  // namespace berth::kube
