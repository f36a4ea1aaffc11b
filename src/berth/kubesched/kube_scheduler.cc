// KubeScheduler: the threads (watches, the loop, the writers that bind,
// evict and write status) and the views (see kube_scheduler.h).
#include "berth/kubesched/kube_scheduler.h"

#include <algorithm>
#include <chrono>
#include <future>

#include "berth/kubesched/informer.h"
#include "berth/kubesched/kube_autoscale.h"
#include "berth/kubesched/kube_util.h"
#include "berth/plugins/builtin.h"
#include "berth/server/extender.h"
#include "berth/tenancy/queue_yaml.h"

namespace berth::kube {

using job::JobState;
using nlohmann::json;

KubeScheduler::KubeScheduler(KubeClient& client, KubeClient& event_client, KubeSchedulerOptions options,
                             server::Logger& log, server::Metrics& metrics)
    : client_(client), event_client_(event_client), options_(std::move(options)), log_(log), metrics_(metrics) {}

KubeScheduler::~KubeScheduler() { Stop(); }

// ---------------------------------------------------------------- threads

void KubeScheduler::Post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(fn));
  }
  cv_.notify_one();
}

bool KubeScheduler::Sync(std::function<void()> fn) {
  auto p = std::make_shared<std::promise<void>>();
  auto f = p->get_future();
  Post([p, fn = std::move(fn)] {
    fn();
    p->set_value();
  });
  return f.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
}

void KubeScheduler::WatchLoop(const std::string& kind, const std::string& collection, std::string rv) {
  InformerHandlers h;
  h.on_list = [this, kind](std::vector<json> items) {
    auto shared = std::make_shared<std::vector<json>>(std::move(items));
    Post([this, kind, shared] { OnRelisted(kind, *shared); });
  };
  h.on_event = [this, kind](const std::string& type, json object) {
    auto obj = std::make_shared<json>(std::move(object));
    if (kind == "node") {
      Post([this, type, obj] { OnNode(type, *obj); });
    } else if (kind == "pod") {
      Post([this, type, obj] { OnPod(type, *obj); });
    } else if (kind == "berth-queue") {
      Post([this, type, obj] { OnQueue(type, *obj); });
    } else if (kind == "deployment") {
      Post([this, type, obj] { OnDeployment(type, *obj); });
    } else {
      Post([this, kind, type, obj] { OnPodGroup(kind, type, *obj); });
    }
  };
  RunInformer(client_, collection, std::move(rv), h, stopping_, log_, options_.watch_timeout_s);
}

Status KubeScheduler::Start() {
  BERTH_RETURN_IF_ERROR(plugins::RegisterBuiltinPlugins(plugins_));
  BERTH_RETURN_IF_ERROR(plugins::RegisterBuiltinPolicies(policies_));
  {
    BERTH_ASSIGN_OR_RETURN(framework::Profile profile, policies_.Find(options_.policy));
    profile.name = options_.policy;
    if (Status a = framework::ApplyPluginArgs({&profile}, options_.plugin_args); !a.ok())
      return InvalidArgument("--plugin-arg: " + a.message());
  }
  // The first lists, applied before anything is decided.
  std::vector<json> nodes, pods;
  BERTH_ASSIGN_OR_RETURN(std::string node_rv, ListAll(client_, "/api/v1/nodes", nodes));
  BERTH_ASSIGN_OR_RETURN(std::string pod_rv, ListAll(client_, "/api/v1/pods", pods));
  struct Crd {
    const char* kind;
    const char* path;
  };
  const std::vector<Crd> crds = {{"berth-podgroup", "/apis/berth.dev/v1alpha1/podgroups"},
                                 {"volcano-podgroup", "/apis/scheduling.volcano.sh/v1beta1/podgroups"},
                                 {"berth-queue", "/apis/berth.dev/v1alpha1/queues"}};
  std::vector<std::pair<std::string, std::string>> crd_rv;
  for (const auto& c : crds) {
    std::vector<json> items;
    auto rv = ListAll(client_, c.path, items);
    if (rv.ok()) {
      for (const auto& item : items) {
        if (std::string(c.kind) == "berth-queue") {
          OnQueue("ADDED", item);
        } else {
          OnPodGroup(c.kind, "ADDED", item);
        }
      }
      crd_rv.push_back({c.kind, *rv});
    } else {
      crd_rv.push_back({c.kind, ""});  // not installed: the watch thread keeps looking
    }
  }
  // Deployments: those with berth.dev/autoscale are sized by Berth's
  // autoscaler (kube_autoscale.h). Unreadable (RBAC): the watch keeps trying.
  std::vector<json> deployments;
  std::string deployment_rv;
  if (auto rv = ListAll(client_, "/apis/apps/v1/deployments", deployments); rv.ok()) {
    deployment_rv = *rv;
  } else {
    log_.Warn("kube_deployments_unreadable", {{"error", rv.status().message()},
                                              {"hint", "autoscaled Deployments are not scaled until they can be read"}});
  }
  OnRelisted("node", nodes);
  OnRelisted("pod", pods);
  OnRelisted("deployment", deployments);
  stopping_ = false;
  loop_ = std::thread([this] { Loop(); });
  for (int i = 0; i < std::max(1, options_.writers); ++i) writers_.emplace_back([this] { WriterLoop(); });
  watchers_.emplace_back([this, node_rv] { WatchLoop("node", "/api/v1/nodes", node_rv); });
  watchers_.emplace_back([this, pod_rv] { WatchLoop("pod", "/api/v1/pods", pod_rv); });
  watchers_.emplace_back([this, deployment_rv] { WatchLoop("deployment", "/apis/apps/v1/deployments", deployment_rv); });
  for (size_t i = 0; i < crds.size(); ++i) {
    const std::string kind = crds[i].kind, path = crds[i].path, rv = crd_rv[i].second;
    watchers_.emplace_back([this, kind, path, rv] { WatchLoop(kind, path, rv); });
  }
  ready_ = true;
  log_.Info("kube_scheduler_started", {{"scheduler_name", options_.scheduler_name}, {"policy", options_.policy},
                                       {"nodes", nodes.size()}, {"pods", pods.size()}});
  return Status::Ok();
}

void KubeScheduler::Stop() {
  if (stopping_.exchange(true)) return;
  ready_ = false;
  client_.StopWatches();
  cv_.notify_all();
  wcv_.notify_all();
  for (auto& t : watchers_)
    if (t.joinable()) t.join();
  watchers_.clear();
  if (loop_.joinable()) loop_.join();
  for (auto& t : writers_)
    if (t.joinable()) t.join();
  writers_.clear();
}

void KubeScheduler::Loop() {
  for (;;) {
    std::deque<std::function<void()>> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // The tick, or less when a spent budget renews or a pending replica's
      // guard expires sooner: the loop wakes then for the pass.
      TimeUs sleep = options_.tick;
      const TimeUs now = clock_.Now();
      for (const TimeUs at : {budget_renew_at_, guard_expires_at_})
        if (at > now) sleep = std::min(sleep, at - now);
      cv_.wait_for(lock, std::chrono::microseconds(sleep), [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) break;
      batch.swap(queue_);
    }
    for (auto& fn : batch) fn();
    Turn();
  }
}

void KubeScheduler::Turn() {
  if (topology_dirty_) Rebuild();
  if (!untracked_.empty()) AdoptUntracked();
  if (!deployments_.empty()) AutoscaleTick();
  const TimeUs now = clock_.Now();
  if (!awaiting_jobs_.empty()) ExpireRepairs(now);
  if (budget_renew_at_ >= 0 && now >= budget_renew_at_) dirty_ = true;
  if (guard_expires_at_ >= 0 && now >= guard_expires_at_) dirty_ = true;
  if (dirty_ && sched_) {
    dirty_ = false;
    RefreshSpares();
    if (!awaiting_jobs_.empty()) AttachReplacements();
    FormJobs();
    Pass();
  }
}

void KubeScheduler::Enqueue(WriteOp op) {
  {
    std::lock_guard<std::mutex> lock(wmu_);
    if (op.kind == WriteOp::Kind::kCondition || op.kind == WriteOp::Kind::kGroupStatus ||
        op.kind == WriteOp::Kind::kScheduledEvent) {
      if (low_writes_.size() > 20000) return;  // shed status updates and events, never binds
      low_writes_.push_back(std::move(op));
    } else {
      writes_.push_back(std::move(op));
    }
  }
  wcv_.notify_one();
}

// An Event about the pod of `op`, as kube-scheduler records them.
void KubeScheduler::PostEvent(const WriteOp& op, const char* type, const char* reason, const std::string& message) {
  const std::string now = NowRfc3339();
  json ev = {{"apiVersion", "v1"},
             {"kind", "Event"},
             {"metadata", {{"generateName", op.name + "."}, {"namespace", op.ns}}},
             {"involvedObject",
              {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", op.name}, {"namespace", op.ns}, {"uid", op.uid}}},
             {"reason", reason},
             {"message", message},
             {"type", type},
             {"source", {{"component", options_.scheduler_name}}},
             {"firstTimestamp", now},
             {"lastTimestamp", now},
             {"count", 1},
             {"reportingComponent", options_.scheduler_name}};
  (void)event_client_.Post("/api/v1/namespaces/" + op.ns + "/events", ev);
}

void KubeScheduler::WriterLoop() {
  for (;;) {
    WriteOp op;
    {
      std::unique_lock<std::mutex> lock(wmu_);
      wcv_.wait(lock, [this] { return stopping_ || !writes_.empty() || !low_writes_.empty(); });
      if (stopping_) return;
      if (!writes_.empty()) {
        op = std::move(writes_.front());
        writes_.pop_front();
      } else {
        op = std::move(low_writes_.front());
        low_writes_.pop_front();
      }
    }
    if (options_.leading && !options_.leading->load()) {
      log_.Warn("kube_write_dropped", {{"pod", op.ns + "/" + op.name}, {"reason", "not leading"}});
      continue;
    }
    switch (op.kind) {
      case WriteOp::Kind::kBind: {
        json annotations = {{"berth.dev/gpus", op.gpus}};
        for (const auto& [k, v] : op.annotations) annotations[k] = v;
        json binding = {{"apiVersion", "v1"},
                        {"kind", "Binding"},
                        {"metadata",
                         {{"name", op.name}, {"namespace", op.ns}, {"uid", op.uid},
                          {"annotations", std::move(annotations)}}},
                        {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", op.node}}}};
        Status s = Retried([&] { return client_.Post(PodPath(op.ns, op.name) + "/binding", binding); }).status();
        if (s.code() == StatusCode::kAlreadyExists || s.code() == StatusCode::kFailedPrecondition) {
          // Bound already (a retry whose first try landed, or someone else):
          // the pod's own nodeName says which.
          auto pod = client_.Get(PodPath(op.ns, op.name));
          if (pod.ok() && Str(Sub(*pod, "spec"), "nodeName") == op.node &&
              Str(Sub(*pod, "metadata"), "uid") == op.uid)
            s = Status::Ok();
        }
        // The Scheduled event waits behind the other binds (it is news, not work).
        if (s.ok() && options_.events) {
          WriteOp ev = op;
          ev.kind = WriteOp::Kind::kScheduledEvent;
          Enqueue(std::move(ev));
        }
        Post([this, op, s] { OnBindDone(op, s); });
        break;
      }
      case WriteOp::Kind::kEvict: {
        json ev = {{"apiVersion", "policy/v1beta1"},
                   {"kind", "Eviction"},
                   {"metadata", {{"name", op.name}, {"namespace", op.ns}}}};
        Status s = client_.Post(PodPath(op.ns, op.name) + "/eviction", ev).status();
        if (!s.ok() && s.code() != StatusCode::kNotFound)
          log_.Warn("kube_evict_failed", {{"pod", op.ns + "/" + op.name}, {"error", s.message()}});
        break;
      }
      case WriteOp::Kind::kDelete: {
        Status s = client_.Delete(PodPath(op.ns, op.name), json{{"preconditions", {{"uid", op.uid}}}}).status();
        if (!s.ok() && s.code() != StatusCode::kNotFound)
          log_.Warn("kube_delete_failed", {{"pod", op.ns + "/" + op.name}, {"error", s.message()}});
        break;
      }
      case WriteOp::Kind::kScale: {
        // The scale subresource (autoscaling/v1 Scale): only spec.replicas changes.
        const json patch = {{"spec", {{"replicas", op.replicas}}}};
        const Status s = Retried([&] { return client_.Patch(DeploymentScalePath(op.ns, op.name), patch); }).status();
        Post([this, op, s] { OnScaleDone(op, s); });
        break;
      }
      case WriteOp::Kind::kScheduledEvent:
        PostEvent(op, "Normal", "Scheduled", "Successfully assigned " + op.ns + "/" + op.name + " to " + op.node);
        break;
      case WriteOp::Kind::kConfigMap: {
        StatusOr<json> written = WriteConfigMap(op);
        std::string uid;
        if (written.ok()) {
          uid = Str(Sub(*written, "metadata"), "uid");
        } else {  // the gang binds anyway: the annotations carry its ranks
          log_.Warn("kube_launch_config_failed",
                    {{"configmap", op.ns + "/" + op.name}, {"job", op.job}, {"error", written.status().message()}});
        }
        Post([this, job = op.job, ns = op.ns, name = op.name, uid] { OnLaunchConfigWritten(job, ns, name, uid); });
        for (auto& bind : op.then) Enqueue(std::move(bind));
        break;
      }
      case WriteOp::Kind::kDeleteConfigMap: {
        Status s = client_.Delete("/api/v1/namespaces/" + op.ns + "/configmaps/" + op.name,
                                  json{{"preconditions", {{"uid", op.uid}}}})
                       .status();
        // Gone already, or replaced by a newer gang of the same group (its uid differs: 409).
        if (!s.ok() && s.code() != StatusCode::kNotFound && s.code() != StatusCode::kAlreadyExists)
          log_.Warn("kube_launch_config_delete_failed", {{"configmap", op.ns + "/" + op.name}, {"error", s.message()}});
        break;
      }
      case WriteOp::Kind::kGroupStatus: {
        // node: the phase; gpus: the scheduled count (as text).
        json status = json::object();
        status["phase"] = op.node;
        status["scheduled"] = std::stoll(op.gpus);
        status["message"] = op.message;
        json patch = json::object();
        patch["status"] = status;
        Status s = client_.Patch("/apis/berth.dev/v1alpha1/namespaces/" + op.ns + "/podgroups/" + op.name + "/status",
                                 patch)
                       .status();
        if (!s.ok() && s.code() != StatusCode::kNotFound)
          log_.Warn("kube_podgroup_status_failed", {{"podgroup", op.ns + "/" + op.name}, {"error", s.message()}});
        break;
      }
      case WriteOp::Kind::kCondition: {
        json patch = {{"status",
                       {{"conditions",
                         json::array({{{"type", "PodScheduled"},
                                       {"status", "False"},
                                       {"reason", "Unschedulable"},
                                       {"message", op.message},
                                       {"lastTransitionTime", NowRfc3339()}}})}}}};
        Status s = client_.Patch(PodPath(op.ns, op.name) + "/status", patch, "application/strategic-merge-patch+json")
                       .status();
        if (s.ok() && options_.events) {
          PostEvent(op, "Warning", "FailedScheduling", op.message);
        }
        break;
      }
    }
  }
}

StatusOr<json> KubeScheduler::Retried(const std::function<StatusOr<json>()>& call) {
  StatusOr<json> r = call();
  for (int attempt = 1; !r.ok() && r.status().code() == StatusCode::kUnavailable && attempt < 5 && !stopping_;
       ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100 * attempt));
    r = call();
  }
  return r;
}

StatusOr<json> KubeScheduler::WriteConfigMap(const WriteOp& op) {
  const std::string collection = "/api/v1/namespaces/" + op.ns + "/configmaps";
  StatusOr<json> r = Retried([&] { return client_.Post(collection, op.object); });
  if (r.ok() || r.status().code() != StatusCode::kAlreadyExists) return r;
  // There already (an earlier placement of the same group, or a retry whose
  // first try landed): replaced with this placement's spec.
  for (int attempt = 0; attempt < 3 && !stopping_; ++attempt) {
    StatusOr<json> current = client_.Get(collection + "/" + op.name);
    if (!current.ok()) return current.status();
    json object = op.object;
    object["metadata"]["resourceVersion"] = Str(Sub(*current, "metadata"), "resourceVersion");
    r = client_.Put(collection + "/" + op.name, object);
    if (r.ok() || r.status().code() != StatusCode::kAlreadyExists) return r;  // 409: changed meanwhile, again
  }
  return r;
}

// ---------------------------------------------------------------- views

json KubeScheduler::NodesJson() {
  json out = json::array();
  Sync([&] {
    if (!sched_) return;
    const auto& st = sched_->state();
    for (int32_t i = 0; i < cluster_->num_nodes(); ++i) {
      const auto& n = cluster_->node(NodeId(i));
      const int64_t used = int64_t{n.gpu_count} * kMilliPerGpu - st.node_free_milli(NodeId(i));
      const auto it = nodes_.find(n.name);
      out.push_back({{"name", n.name},
                     {"gpus", n.gpu_count},
                     {"gpus_used_milli", used},
                     {"gpu_type", n.gpu_type.valid() ? cluster_->gpu_type(n.gpu_type).name : ""},
                     {"leaf", cluster_->domain(n.domain[static_cast<int>(cluster::Level::kLeaf)]).name},
                     {"usable", it != nodes_.end() && it->second.usable()},
                     {"spare", spares_.count(n.name) > 0}});
    }
  });
  return out;
}

json KubeScheduler::PodsJson() {
  json out = json::array();
  Sync([&] {
    for (const auto& [uid, p] : pods_) {
      if (p.scheduler != options_.scheduler_name && p.job < 0) continue;
      json pod = {{"namespace", p.ns}, {"name", p.name}, {"uid", uid}, {"node", p.node}, {"group", p.group},
                  {"job", p.job}, {"task", p.task}, {"reason", p.shown_reason}};
      if (p.service.replica()) pod["service"] = p.service.name;  // a service replica (pod_service.h)
      if (p.service.best_effort) pod["best_effort"] = true;
      out.push_back(std::move(pod));
    }
  });
  return out;
}

std::string KubeScheduler::MetricsText() {
  std::string out;
  Sync([&] {
    int64_t used = 0, total = 0;
    size_t pending = 0, running = 0;
    if (sched_) {
      used = sched_->state().allocated_milli();
      total = cluster_->total_gpus();
      pending = sched_->pending_count();
      running = sched_->running_count();
    }
    out += "# HELP berth_kube_pods_bound_total Pods Berth bound through the API server.\n";
    out += "# TYPE berth_kube_pods_bound_total counter\nberth_kube_pods_bound_total " + std::to_string(binds_ok_) + "\n";
    out += "# HELP berth_kube_bind_failures_total Bind requests that failed.\n";
    out += "# TYPE berth_kube_bind_failures_total counter\nberth_kube_bind_failures_total " +
           std::to_string(binds_failed_) + "\n";
    out += "# HELP berth_kube_evictions_total Pods Berth evicted.\n";
    out += "# TYPE berth_kube_evictions_total counter\nberth_kube_evictions_total " + std::to_string(evictions_) + "\n";
    out += "# HELP berth_kube_api_requests_total Requests sent to the API server.\n";
    out += "# TYPE berth_kube_api_requests_total counter\nberth_kube_api_requests_total " +
           std::to_string(client_.requests() + event_client_.requests()) + "\n";
    out += "# HELP berth_kube_scale_writes_total Deployment scale writes of Berth's autoscaler, by result.\n";
    out += "# TYPE berth_kube_scale_writes_total counter\nberth_kube_scale_writes_total{result=\"ok\"} " +
           std::to_string(scale_writes_) + "\nberth_kube_scale_writes_total{result=\"failed\"} " +
           std::to_string(scale_failures_) + "\n";
    out += "# HELP berth_kube_autoscaled_deployments Deployments sized by Berth's autoscaler.\n";
    out += "# TYPE berth_kube_autoscaled_deployments gauge\nberth_kube_autoscaled_deployments " +
           std::to_string(deployments_.size()) + "\n";
    out += "# HELP berth_gpus Whole GPUs in the cluster model.\n# TYPE berth_gpus gauge\nberth_gpus " +
           std::to_string(total) + "\n";
    out += "# HELP berth_gpus_allocated GPUs held by pods (fractional in thousandths).\n";
    out += "# TYPE berth_gpus_allocated gauge\nberth_gpus_allocated " + std::to_string(used / 1000.0) + "\n";
    out += "# HELP berth_jobs Jobs by state.\n# TYPE berth_jobs gauge\n";
    out += "berth_jobs{state=\"pending\"} " + std::to_string(pending) + "\n";
    out += "berth_jobs{state=\"running\"} " + std::to_string(running) + "\n";
    out += "# HELP berth_kube_pods Pods Berth tracks.\n# TYPE berth_kube_pods gauge\nberth_kube_pods " +
           std::to_string(pods_.size()) + "\n";
    out += RepairMetricsText();
  });
  std::string hist;
  metrics_.pass_latency.Render("berth_scheduling_pass_seconds", "Wall time of one scheduling pass.", hist);
  hist += "# HELP berth_build_info The version, git commit and build type of this berth (value 1).\n"
          "# TYPE berth_build_info gauge\nberth_build_info{version=\"" + server::PromLabel(metrics_.build_version) +
          "\",commit=\"" + server::PromLabel(metrics_.build_commit) + "\",build_type=\"" +
          server::PromLabel(metrics_.build_type) + "\"} 1\n";
  server::RenderProcessMetrics(hist);
  return out + hist;
}

}  // namespace berth::kube
