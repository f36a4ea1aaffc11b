// ExtenderLink (see extender_link.h).
#include "berth/kubesched/extender_link.h"

#include <algorithm>
#include <memory>

#include "berth/kubesched/informer.h"

namespace berth::kube {

using nlohmann::json;

namespace {

struct PodKey {
  std::string ns, name, uid, node;
  bool ended = false;
};

PodKey KeyOf(const json& pod) {
  PodKey k;
  const json md = pod.value("metadata", json::object());
  k.ns = md.value("namespace", "");
  k.name = md.value("name", "");
  k.uid = md.value("uid", "");
  k.node = pod.value("spec", json::object()).value("nodeName", "");
  const std::string phase = pod.value("status", json::object()).value("phase", "");
  k.ended = phase == "Succeeded" || phase == "Failed";
  return k;
}

// Where a group key's PodGroup objects live: {group/version path, plural}.
struct PodGroupKind {
  const char* key;
  const char* api;  // "/apis/GROUP/VERSION"
};
constexpr PodGroupKind kPodGroupKinds[] = {
    {"scheduling.k8s.io/group-name", "/apis/scheduling.volcano.sh/v1beta1"},
    {"scheduling.x-k8s.io/pod-group", "/apis/scheduling.x-k8s.io/v1alpha1"},
    {"pod-group.scheduling.sigs.k8s.io", "/apis/scheduling.sigs.k8s.io/v1alpha1"},
};
constexpr auto kGroupCacheFor = std::chrono::seconds(30);
constexpr size_t kMaxGroupsCached = 10'000;

}  // namespace

StatusOr<server::ApiPod> ExtenderLink::FromObject(const json& pod) {
  StatusOr<server::k8s::Pod> parsed = server::k8s::ParsePod(pod);
  if (!parsed.ok()) return parsed.status();
  server::ApiPod out;
  out.pod = std::move(parsed).value();
  out.pod.KeepSchedulingMetadata();
  const PodKey k = KeyOf(pod);
  out.node = k.node;
  out.ended = k.ended;
  out.scheduler_name = pod.value("spec", json::object()).value("schedulerName", "");
  return out;
}

std::function<Status(const std::string&, const std::string&, const std::string&, const std::string&)>
ExtenderLink::Binder() {
  return [this](const std::string& ns, const std::string& name, const std::string& uid, const std::string& node) {
    json binding = {{"apiVersion", "v1"},
                    {"kind", "Binding"},
                    {"metadata", {{"name", name}, {"namespace", ns}, {"uid", uid}}},
                    {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
    if (uid.empty()) binding["metadata"].erase("uid");
    return client_.Post(PodPath(ns, name) + "/binding", binding).status();
  };
}

StatusOr<server::ApiPod> ExtenderLink::GetPod(const std::string& ns, const std::string& name) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(ns + "/" + name);
    if (it != pods_.end()) return it->second;
  }
  // Not delivered by the watch (yet): ask the API server.
  StatusOr<json> got = lookups_.Get(PodPath(ns, name));
  if (!got.ok()) return got.status();
  return FromObject(*got);
}

StatusOr<std::optional<int32_t>> ExtenderLink::GroupMinMember(const server::k8s::Pod& pod) {
  const std::string key = pod.group_key();
  const PodGroupKind* kind = nullptr;
  for (const auto& k : kPodGroupKinds)
    if (key == k.key) kind = &k;
  if (!kind) return std::optional<int32_t>();  // Kueue, KAI: no PodGroup object to check
  const std::string path = std::string(kind->api) + "/namespaces/" + pod.ns + "/podgroups/" + pod.group_name();
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = groups_.find(path);
    if (it != groups_.end() && now - it->second.at < kGroupCacheFor) return it->second.size;
  }
  StatusOr<std::optional<int32_t>> size = std::optional<int32_t>();
  StatusOr<json> pg = lookups_.Get(path);
  if (pg.ok()) {
    const json spec = pg->value("spec", json::object());
    const json mm = spec.value("minMember", json());
    if (!mm.is_number_integer()) {
      size = InvalidArgument("PodGroup " + pod.ns + "/" + pod.group_name() + " has no integer spec.minMember");
    } else {
      const int64_t v = mm.get<int64_t>();
      size = std::optional<int32_t>(static_cast<int32_t>(std::clamp<int64_t>(v, -1, INT32_MAX)));
    }
  } else if (pg.status().code() == StatusCode::kNotFound) {
    // Missing object, or no such kind here? The group/version's discovery says.
    StatusOr<json> api = lookups_.Get(kind->api);
    bool served = false;
    if (api.ok() && api->contains("resources") && (*api)["resources"].is_array())
      for (const auto& r : (*api)["resources"])
        if (r.is_object() && r.value("name", "") == "podgroups") served = true;
    if (!api.ok() && api.status().code() != StatusCode::kNotFound) {
      size = api.status();
    } else {
      size = served ? StatusOr<std::optional<int32_t>>(NotFound(path)) : std::optional<int32_t>();
    }
  } else {
    size = pg.status();
  }
  if (!size.ok() && size.status().code() == StatusCode::kUnavailable) return size;  // not cached
  std::lock_guard<std::mutex> lock(mu_);
  if (groups_.size() >= kMaxGroupsCached) groups_.clear();
  groups_[path] = GroupSeen{size, now};
  return size;
}

void ExtenderLink::Start(server::Service& service) {
  stop_ = false;
  watch_ = std::thread([this, &service] {
    // Pods seen (uid -> key), so a re-list can tell which ones went away.
    auto known = std::make_shared<std::map<std::string, PodKey>>();
    auto apply = [this, &service, known](const PodKey& k, const json* object, bool deleted) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        const std::string ref = k.ns + "/" + k.name;
        if (deleted || !object) {
          auto it = pods_.find(ref);
          if (it != pods_.end() && it->second.pod.uid == k.uid) pods_.erase(it);
        } else if (StatusOr<server::ApiPod> p = FromObject(*object); p.ok()) {
          pods_[ref] = std::move(p).value();
        }
      }
      if (deleted || k.ended) {
        if (known->erase(k.uid)) service.ExtenderPodGone(k.ns, k.name, k.uid);
        return;
      }
      auto [it, fresh] = known->emplace(k.uid, k);
      if (!k.node.empty() && (fresh || it->second.node.empty())) service.ExtenderPodBound(k.ns, k.name, k.uid, k.node);
      it->second = k;
    };
    InformerHandlers h;
    h.on_list = [this, apply, known](std::vector<json> items) {
      std::set<std::string> seen;
      {
        std::lock_guard<std::mutex> lock(mu_);
        pods_.clear();  // the list replaces what was known
      }
      for (const auto& item : items) {
        PodKey k = KeyOf(item);
        seen.insert(k.uid);
        apply(k, &item, false);
      }
      std::vector<PodKey> gone;
      for (const auto& [uid, k] : *known)
        if (!seen.count(uid)) gone.push_back(k);
      for (const auto& k : gone) apply(k, nullptr, true);
    };
    h.on_event = [apply](const std::string& type, json object) {
      apply(KeyOf(object), &object, type == "DELETED");
    };
    RunInformer(client_, "/api/v1/pods", "", h, stop_, log_);
  });
}

void ExtenderLink::Stop() {
  if (stop_.exchange(true)) return;
  client_.StopWatches();
  if (watch_.joinable()) watch_.join();
}

}  // namespace berth::kube
