// The extender mode's link to the API server: the bind verb creates the
// Binding through pods/binding, and a pod watch tells the service which pods
// were bound, deleted or ended (Service::ExtenderPodBound / ExtenderPodGone),
// so its view follows Kubernetes instead of expiring.
//
// It is also the verbs' source of truth (server::ExtenderPodSource): the
// watch keeps every pod's scheduling facts (uid, node, schedulerName, phase,
// priority, resources, group labels; nothing else), and a pod the watch has
// not delivered yet is read from the API server. PodGroups are read when a
// group is checked and kept 30 s.
//
//   auto link = std::make_shared<ExtenderLink>(client, lookup_client, log);
//   options.k8s_bind = link->Binder();
//   options.k8s_pods = link;
//   ... Service service(...); service.Start();
//   link->Start(service);   // the watch thread
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "berth/kubesched/client.h"
#include "berth/server/extender_verify.h"
#include "berth/server/log.h"
#include "berth/server/service.h"

namespace berth::kube {

class ExtenderLink final : public server::ExtenderPodSource {
 public:
  // `client` binds and watches; `lookups` reads pods and PodGroups for the
  // checks (its own rate limit, so a flood of unknown pods cannot slow binds).
  ExtenderLink(KubeClient& client, KubeClient& lookups, server::Logger& log)
      : client_(client), lookups_(lookups), log_(log) {}
  ~ExtenderLink() override { Stop(); }
  // What ServiceOptions::k8s_bind calls.
  std::function<Status(const std::string&, const std::string&, const std::string&, const std::string&)> Binder();
  void Start(server::Service& service);
  void Stop();

  // server::ExtenderPodSource
  StatusOr<server::ApiPod> GetPod(const std::string& ns, const std::string& name) override;
  StatusOr<std::optional<int32_t>> GroupMinMember(const server::k8s::Pod& pod) override;

  // A v1.Pod object as the checks see it (exposed for tests).
  static StatusOr<server::ApiPod> FromObject(const nlohmann::json& pod);

 private:
  struct GroupSeen {
    StatusOr<std::optional<int32_t>> size = std::optional<int32_t>();
    std::chrono::steady_clock::time_point at;
  };
  KubeClient& client_;
  KubeClient& lookups_;
  server::Logger& log_;
  std::atomic<bool> stop_{false};
  std::thread watch_;
  std::mutex mu_;
  std::map<std::string, server::ApiPod> pods_;  // "ns/name" -> the pod, as the watch last saw it
  std::map<std::string, GroupSeen> groups_;     // PodGroup path -> its minMember, read at `at`
};

}  // namespace berth::kube
