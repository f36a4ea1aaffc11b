// ExtenderLink (see extender_link.h).
#include "berth/kubesched/extender_link.h"

#include <map>
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

}  // namespace

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

void ExtenderLink::Start(server::Service& service) {
  stop_ = false;
  watch_ = std::thread([this, &service] {
    // Pods seen (uid -> key), so a re-list can tell which ones went away.
    auto known = std::make_shared<std::map<std::string, PodKey>>();
    auto apply = [&service, known](const PodKey& k, bool deleted) {
      if (deleted || k.ended) {
        if (known->erase(k.uid)) service.ExtenderPodGone(k.ns, k.name, k.uid);
        return;
      }
      auto [it, fresh] = known->emplace(k.uid, k);
      if (!k.node.empty() && (fresh || it->second.node.empty())) service.ExtenderPodBound(k.ns, k.name, k.uid, k.node);
      it->second = k;
    };
    InformerHandlers h;
    h.on_list = [apply, known](std::vector<json> items) {
      std::set<std::string> seen;
      for (const auto& item : items) {
        PodKey k = KeyOf(item);
        seen.insert(k.uid);
        apply(k, false);
      }
      std::vector<PodKey> gone;
      for (const auto& [uid, k] : *known)
        if (!seen.count(uid)) gone.push_back(k);
      for (const auto& k : gone) apply(k, true);
    };
    h.on_event = [apply](const std::string& type, json object) { apply(KeyOf(object), type == "DELETED"); };
    RunInformer(client_, "/api/v1/pods", "", h, stop_, log_);
  });
}

void ExtenderLink::Stop() {
  if (stop_.exchange(true)) return;
  client_.StopWatches();
  if (watch_.joinable()) watch_.join();
}

}  // namespace berth::kube
