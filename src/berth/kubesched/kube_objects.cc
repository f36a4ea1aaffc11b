// KubeScheduler: what the watches report, applied on the loop thread (Nodes,
// Pods, PodGroups; a pod that leaves releases its task).
#include "berth/kubesched/kube_scheduler.h"

#include <algorithm>
#include <chrono>
#include <future>

#include "berth/kubesched/informer.h"
#include "berth/kubesched/kube_util.h"
#include "berth/plugins/builtin.h"
#include "berth/server/extender.h"
#include "berth/tenancy/queue_yaml.h"

namespace berth::kube {

using job::JobState;
using nlohmann::json;


void KubeScheduler::OnRelisted(const std::string& kind, const std::vector<json>& items) {
  if (kind == "node") {
    std::set<std::string> seen;
    for (const auto& item : items) {
      seen.insert(Str(Sub(item, "metadata"), "name"));
      OnNode("ADDED", item);
    }
    for (auto it = nodes_.begin(); it != nodes_.end();) {
      if (!seen.count(it->first)) {
        it = nodes_.erase(it);
        topology_dirty_ = true;
      } else {
        ++it;
      }
    }
  } else if (kind == "pod") {
    std::set<std::string> seen;
    for (const auto& item : items) {
      seen.insert(Str(Sub(item, "metadata"), "uid"));
      OnPod("ADDED", item);
    }
    std::vector<std::string> gone;
    for (const auto& [uid, p] : pods_)
      if (!seen.count(uid)) gone.push_back(uid);
    for (const auto& uid : gone) {
      auto it = pods_.find(uid);
      PodGone(it->second, JobState::kCancelled);
      pods_.erase(it);
    }
  } else if (kind == "deployment") {
    std::set<std::string> seen;
    for (const auto& item : items) {
      const json& md = Sub(item, "metadata");
      seen.insert(Str(md, "namespace") + "/" + Str(md, "name"));
      OnDeployment("ADDED", item);
    }
    for (auto it = deployments_.begin(); it != deployments_.end();)
      it = seen.count(it->first) ? std::next(it) : deployments_.erase(it);
    return;  // no pass needed: the autoscaler acts at its evaluations
  } else if (kind == "berth-queue") {
    queue_crds_.clear();
    for (const auto& item : items) OnQueue("ADDED", item);
    topology_dirty_ = true;
  } else {
    const std::string prefix = kind + ":";
    for (auto it = pod_groups_.begin(); it != pod_groups_.end();)
      it = it->first.rfind(prefix, 0) == 0 ? pod_groups_.erase(it) : std::next(it);
    for (const auto& item : items) OnPodGroup(kind, "ADDED", item);
  }
  dirty_ = true;
}

void KubeScheduler::OnNode(const std::string& type, const json& obj) {
  const std::string name = Str(Sub(obj, "metadata"), "name");
  if (name.empty()) return;
  if (type == "DELETED") {
    if (nodes_.erase(name)) {
      topology_dirty_ = true;
      dirty_ = true;
      log_.Info("kube_node_deleted", {{"node", name}});
    }
    return;
  }
  auto info = ParseNode(obj, options_.node_model);
  if (!info.ok()) {
    log_.Warn("kube_node_ignored", {{"node", name}, {"error", info.status().message()}});
    return;
  }
  auto it = nodes_.find(name);
  if (it == nodes_.end()) {
    nodes_.emplace(name, *info);
    topology_dirty_ = true;
    dirty_ = true;
    return;
  }
  const NodeInfo& old = it->second;
  const auto& a = old.spec;
  const auto& b = info->spec;
  const bool shape_changed = a.cpu_milli != b.cpu_milli || a.memory_mib != b.memory_mib ||
                             a.gpu_count != b.gpu_count || a.gpu_type != b.gpu_type || a.region != b.region ||
                             a.cluster != b.cluster || a.spine != b.spine || a.leaf != b.leaf || a.nvlink != b.nvlink;
  const bool was_usable = old.usable();
  const bool had_pods = !old.loses_pods();
  it->second = *info;
  if (shape_changed) {
    topology_dirty_ = true;
    dirty_ = true;
    return;
  }
  if (was_usable != info->usable() && sched_ && !topology_dirty_) {
    if (auto id = NodeIdOf(name)) {
      (void)sched_->SetNodeUp(*id, info->usable() && !spares_.count(name));  // a spare stays down
      log_.Info("kube_node_usable", {{"node", name}, {"usable", info->usable()}, {"ready", info->ready},
                                     {"no_execute", info->no_execute}});
    }
    dirty_ = true;
  }
  // Not ready, or a NoExecute taint: the gangs with a pod there are repaired
  // in place or requeued (kube_repair.cc), also when the node was cordoned before.
  if (had_pods && info->loses_pods() && sched_ && !topology_dirty_) {
    if (auto id = NodeIdOf(name))
      NodeLost(*id, !info->ready ? "node " + name + " is not ready"
                                 : "node " + name + " has the NoExecute taint " + info->no_execute);
  }
}

std::string KubeScheduler::GroupKey(const PodEntry& p) const { return p.group.empty() ? "uid:" + p.uid : p.group; }

int32_t KubeScheduler::MinMember(const PodEntry& p) const {
  if (p.group.empty()) return 1;
  for (const char* kind : {"berth-podgroup:", "volcano-podgroup:"}) {
    auto it = pod_groups_.find(kind + p.group);
    if (it != pod_groups_.end() && it->second.min_member > 0) return it->second.min_member;
  }
  return std::max(1, p.min_member);
}

void KubeScheduler::OnPodGroup(const std::string& kind, const std::string& type, const json& obj) {
  const json& md = Sub(obj, "metadata");
  const std::string key = kind + ":" + Str(md, "namespace") + "/" + Str(md, "name");
  if (type == "DELETED") {
    pod_groups_.erase(key);
    dirty_ = true;
    return;
  }
  const json& spec = Sub(obj, "spec");
  GroupInfo g;
  if (spec.is_object()) {
    const json& mm = Sub(spec, "minMember");
    if (mm.is_number_integer()) g.min_member = std::max<int32_t>(0, mm.get<int32_t>());
    g.queue = Str(spec, "queue");
    g.priority_class = Str(spec, "priorityClassName");
    auto topology = ParsePodGroupTopology(spec);
    if (topology.ok()) {
      g.topology = std::move(topology).value();
    } else {
      g.topology_error = "PodGroup " + Str(md, "namespace") + "/" + Str(md, "name") + ": " + topology.status().message();
    }
    if (const json& mem = Sub(spec, "gpuMemoryMiB"); !mem.is_null())  // -1: not a non-negative integer
      g.gpu_memory_mib = mem.is_number_integer() && mem.get<int64_t>() >= 0 ? mem.get<int64_t>() : -1;
  }
  g.repair = Label(md, "annotations", "berth.dev/repair");
  pod_groups_[key] = g;
  dirty_ = true;
}

void KubeScheduler::OnPod(const std::string& type, const json& obj) {
  const json& md = Sub(obj, "metadata");
  const std::string uid = Str(md, "uid");
  if (uid.empty()) return;
  auto it = pods_.find(uid);
  const json& status = Sub(obj, "status");
  const std::string phase = status.is_object() ? Str(status, "phase") : "";
  if (type == "DELETED" || phase == "Succeeded" || phase == "Failed") {
    if (it != pods_.end()) {
      PodGone(it->second, phase == "Succeeded" ? JobState::kSucceeded
                                               : phase == "Failed" ? JobState::kFailed : JobState::kCancelled);
      pods_.erase(it);
      dirty_ = true;
    }
    return;
  }
  const json& spec = Sub(obj, "spec");
  const std::string node = Str(spec, "nodeName");
  if (it != pods_.end()) {
    PodEntry& p = it->second;
    p.phase = phase;
    if (!Sub(md, "deletionTimestamp").is_null()) p.terminating = true;
    if (!node.empty() && p.node.empty()) {
      p.node = node;
      if (p.job < 0) {
        untracked_.insert(uid);  // bound by someone else
      } else {
        p.binding = false;
      }
    }
    return;
  }
  auto parsed = server::k8s::ParsePod(obj);
  if (!parsed.ok()) {
    log_.Warn("kube_pod_ignored", {{"pod", Str(md, "namespace") + "/" + Str(md, "name")},
                                   {"error", parsed.status().message()}});
    return;
  }
  PodEntry p;
  p.ns = parsed->ns;
  p.name = parsed->name;
  p.uid = uid;
  p.scheduler = Str(spec, "schedulerName");
  p.node = node;
  p.phase = phase;
  p.terminating = !Sub(md, "deletionTimestamp").is_null();
  std::string group = parsed->group_name();
  if (group.empty()) group = Label(md, "labels", "berth.dev/pod-group");
  if (group.empty()) group = Label(md, "annotations", "berth.dev/pod-group");
  p.group = group.empty() ? "" : p.ns + "/" + group;
  p.min_member = parsed->min_member();
  p.queue = parsed->queue() == parsed->ns ? std::string() : parsed->queue();  // else the tenant's leaf
  p.priority = parsed->priority;
  p.priority_class = Str(spec, "priorityClassName");
  p.gpus = parsed->gpus;
  p.cpu_milli = parsed->cpu_milli;
  p.memory_mib = parsed->memory_mib;
  p.created = Str(md, "creationTimestamp");
  p.gpu_annotation = Label(md, "annotations", "berth.dev/gpus");
  p.required_level = Label(md, "annotations", "berth.dev/required-level");
  p.preferred_level = Label(md, "annotations", "berth.dev/preferred-level");
  p.subgroup = Label(md, "labels", "berth.dev/subgroup");
  if (p.subgroup.empty()) p.subgroup = Label(md, "labels", "kai.scheduler/subgroup-name");
  p.launcher = Label(md, "annotations", "berth.dev/launcher");
  p.repair = Label(md, "annotations", "berth.dev/repair");
  p.gpu_memory = Label(md, "annotations", "berth.dev/gpu-memory-mib");
  if (auto service = server::k8s::ServiceOfPod(*parsed); service.ok()) {
    p.service = std::move(service).value();
  } else {
    p.service_error = service.status().message();
  }
  const bool bound = !p.node.empty();
  pods_.emplace(uid, std::move(p));
  if (bound) untracked_.insert(uid);
  dirty_ = true;
}

// A pod left (deleted, or ended): its task is released; a pending job it
// belonged to is dissolved (its group forms again from the pods left).
void KubeScheduler::PodGone(PodEntry& pod, JobState how) {
  untracked_.erase(pod.uid);
  for (auto& [jid, other] : jobs_) {
    if (other.waiting_for.erase(pod.uid) && other.waiting_for.empty()) dirty_ = true;
  }
  if (pod.job < 0) return;
  auto jit = jobs_.find(pod.job);
  const int64_t job_id = pod.job;
  pod.job = -1;
  if (jit == jobs_.end()) return;
  JobEntry& job = jit->second;
  for (auto& u : job.pod_of_task)
    if (u == pod.uid) u.clear();
  if (!job.running) {
    CancelPendingJob(job_id);
    return;
  }
  if (sched_) {
    Status s = sched_->ReleaseTask(JobId(job_id), pod.task, how == JobState::kCancelled ? JobState::kCancelled : how);
    if (!s.ok() && s.code() != StatusCode::kNotFound)
      log_.Warn("kube_release_failed", {{"pod", pod.ns + "/" + pod.name}, {"error", s.message()}});
  }
  const bool any_left =
      std::any_of(job.pod_of_task.begin(), job.pod_of_task.end(), [](const std::string& u) { return !u.empty(); });
  if (!any_left) {
    DropAwaited(job);  // a repaired task's replacement has no gang left to join
    ++metrics_.jobs_finished;
    ForgetLaunchConfig(job);
    jobs_.erase(jit);
  }
  dirty_ = true;
}

void KubeScheduler::CancelPendingJob(int64_t id) {
  auto jit = jobs_.find(id);
  if (jit == jobs_.end()) return;
  if (sched_) (void)sched_->Finish(JobId(id), JobState::kCancelled);
  for (const auto& uid : jit->second.pod_of_task) {
    auto p = pods_.find(uid);
    if (p != pods_.end() && p->second.job == id) {
      p->second.job = -1;
      p->second.task = -1;
    }
  }
  if (auto g = pending_job_of_group_.find(jit->second.group); g != pending_job_of_group_.end() && g->second == id)
    pending_job_of_group_.erase(g);
  jobs_.erase(jit);
  dirty_ = true;
}

std::optional<NodeId> KubeScheduler::NodeIdOf(const std::string& name) const {
  if (!cluster_) return std::nullopt;
  return cluster_->FindNode(name);
}

}  // namespace berth::kube
