// The extender mode's link to the API server: the bind verb creates the
// Binding through pods/binding, and a pod watch tells the service which pods
// were bound, deleted or ended (Service::ExtenderPodBound / ExtenderPodGone),
// so its view follows Kubernetes instead of expiring.
//
//   ExtenderLink link(client, log);
//   options.k8s_bind = link.Binder();
//   ... Service service(...); service.Start();
//   link.Start(service);   // the watch thread
#pragma once

#include <atomic>
#include <functional>
#include <set>
#include <string>
#include <thread>

#include "berth/kubesched/client.h"
#include "berth/server/log.h"
#include "berth/server/service.h"

namespace berth::kube {

class ExtenderLink {
 public:
  ExtenderLink(KubeClient& client, server::Logger& log) : client_(client), log_(log) {}
  ~ExtenderLink() { Stop(); }
  // What ServiceOptions::k8s_bind calls.
  std::function<Status(const std::string&, const std::string&, const std::string&, const std::string&)> Binder();
  void Start(server::Service& service);
  void Stop();

 private:
  KubeClient& client_;
  server::Logger& log_;
  std::atomic<bool> stop_{false};
  std::thread watch_;
};

}  // namespace berth::kube
