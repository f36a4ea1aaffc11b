// KubeScheduler: service replicas on Kubernetes (docs/services.md, "On
// Kubernetes"): a Deployment's pods, or pods labelled berth.dev/service,
// become replica jobs (server/pod_service.h), and --reserved-nodes names the
// Nodes the colocation filter keeps for them. Autoscaled Deployments:
// kube_autoscale.cc.
#include <algorithm>
#include <cctype>

#include "berth/kubesched/kube_scheduler.h"

namespace berth::kube {

void KubeScheduler::MarkReplica(const PodEntry& pod, JobEntry& job) {
  if (!pod.service.replica()) {
    server::k8s::MakeReplica(pod.service, JobId(), 0, job.spec);  // best effort, if so annotated
    return;
  }
  auto [it, added] = service_ids_.try_emplace(pod.service.name, 0);
  if (added) it->second = next_job_++;
  int32_t active = 0;
  for (const auto& [id, other] : jobs_)
    if (id != job.id && other.service == pod.service.name) ++active;
  job.service = pod.service.name;
  // Without berth.dev/min-replicas on the pod, an autoscaled Deployment's
  // floor is the service's guaranteed count (as min_replicas is in a service document).
  server::k8s::PodService service = pod.service;
  if (service.min_replicas < 0)
    if (auto d = deployments_.find(pod.service.name); d != deployments_.end() && d->second.autoscaler)
      service.min_replicas = d->second.spec.min_replicas;
  server::k8s::MakeReplica(service, JobId(it->second), active, job.spec);
}

StatusOr<framework::PluginArgs> KubeScheduler::ColocationFor(const cluster::Cluster& c) const {
  server::ServeColocation col = options_.colocation;
  if (col.reserved.empty()) return framework::PluginArgs{};
  // Nodes come and go: a reserved name that is no Node now is left out.
  std::string kept, missing;
  size_t pos = 0;
  while (pos <= col.reserved.size()) {
    size_t comma = col.reserved.find(',', pos);
    if (comma == std::string::npos) comma = col.reserved.size();
    const std::string item = col.reserved.substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty()) continue;
    const bool numeric = std::all_of(item.begin(), item.end(), [](unsigned char ch) {
      return std::isdigit(ch) || ch == '-';
    });
    if (numeric || c.FindNode(item)) {
      kept += (kept.empty() ? "" : ",") + item;
    } else {
      missing += (missing.empty() ? "" : ", ") + item;
    }
  }
  if (kept.empty())
    return InvalidArgument("--reserved-nodes: none of the nodes is a Node of the cluster (" + missing + ")");
  if (!missing.empty()) log_.Warn("kube_reserved_nodes_missing", {{"nodes", missing}});
  col.reserved = kept;
  return server::ColocationArgs(col, c, options_.queue_file ? &*options_.queue_file : nullptr);
}

}  // namespace berth::kube
