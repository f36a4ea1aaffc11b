// KubeScheduler: watches, the loop that owns the scheduling core, and the
// writers that bind and evict (see kube_scheduler.h).
#include "berth/kubesched/kube_scheduler.h"

#include <algorithm>
#include <chrono>
#include <future>

#include "berth/kubesched/informer.h"
#include "berth/plugins/builtin.h"
#include "berth/server/extender.h"
#include "berth/tenancy/queue_yaml.h"

namespace berth::kube {

using job::JobState;
using nlohmann::json;

namespace {

std::string Str(const json& v, const char* key) {
  auto it = v.find(key);
  return it != v.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const json& Sub(const json& v, const char* key) {
  static const json kNull;
  auto it = v.find(key);
  return it == v.end() ? kNull : *it;
}

std::string Label(const json& md, const char* map, const char* key) {
  const json& m = Sub(md, map);
  return m.is_object() ? Str(m, key) : std::string();
}

// Natural order of names: "w-2" before "w-10", so ranks follow the names.
bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      std::string_view na(a.data() + i, i2 - i), nb(b.data() + j, j2 - j);
      while (na.size() > 1 && na[0] == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb[0] == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = i2;
      j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

std::string MaskText(uint64_t mask) {
  std::string out;
  for (int g = 0; g < 64; ++g)
    if (mask & (uint64_t{1} << g)) out += (out.empty() ? "" : ",") + std::to_string(g);
  return out;
}

uint64_t ParseMask(const std::string& text) {
  uint64_t mask = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find(',', i);
    if (j == std::string::npos) j = text.size();
    const std::string part = text.substr(i, j - i);
    char* end = nullptr;
    const long g = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || !end || *end || g < 0 || g >= 64) return 0;
    mask |= uint64_t{1} << g;
    i = j + 1;
  }
  return mask;
}

std::string NowRfc3339() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

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
    } else {
      Post([this, kind, type, obj] { OnPodGroup(kind, type, *obj); });
    }
  };
  RunInformer(client_, collection, std::move(rv), h, stopping_, log_, options_.watch_timeout_s);
}

Status KubeScheduler::Start() {
  BERTH_RETURN_IF_ERROR(plugins::RegisterBuiltinPlugins(plugins_));
  BERTH_RETURN_IF_ERROR(plugins::RegisterBuiltinPolicies(policies_));
  BERTH_RETURN_IF_ERROR(policies_.Find(options_.policy).status());
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
  OnRelisted("node", nodes);
  OnRelisted("pod", pods);
  stopping_ = false;
  loop_ = std::thread([this] { Loop(); });
  for (int i = 0; i < std::max(1, options_.writers); ++i) writers_.emplace_back([this] { WriterLoop(); });
  watchers_.emplace_back([this, node_rv] { WatchLoop("node", "/api/v1/nodes", node_rv); });
  watchers_.emplace_back([this, pod_rv] { WatchLoop("pod", "/api/v1/pods", pod_rv); });
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
      cv_.wait_for(lock, std::chrono::microseconds(options_.tick), [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) break;
      batch.swap(queue_);
    }
    for (auto& fn : batch) fn();
    if (topology_dirty_) Rebuild();
    if (!untracked_.empty()) AdoptUntracked();
    if (dirty_ && sched_) {
      dirty_ = false;
      FormJobs();
      Pass();
    }
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
        json binding = {{"apiVersion", "v1"},
                        {"kind", "Binding"},
                        {"metadata",
                         {{"name", op.name}, {"namespace", op.ns}, {"uid", op.uid},
                          {"annotations", {{"berth.dev/gpus", op.gpus}}}}},
                        {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", op.node}}}};
        Status s = client_.Post(PodPath(op.ns, op.name) + "/binding", binding).status();
        for (int attempt = 1; !s.ok() && s.code() == StatusCode::kUnavailable && attempt < 5 && !stopping_; ++attempt) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100 * attempt));
          s = client_.Post(PodPath(op.ns, op.name) + "/binding", binding).status();
        }
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
      case WriteOp::Kind::kScheduledEvent:
        PostEvent(op, "Normal", "Scheduled", "Successfully assigned " + op.ns + "/" + op.name + " to " + op.node);
        break;
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

// ---------------------------------------------------------------- objects

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
  it->second = *info;
  if (shape_changed) {
    topology_dirty_ = true;
    dirty_ = true;
    return;
  }
  if (was_usable != info->usable() && sched_ && !topology_dirty_) {
    if (auto id = NodeIdOf(name)) {
      (void)sched_->SetNodeUp(*id, info->usable());
      if (!info->ready && was_usable) NodeLost(*id, "node " + name + " is not ready");
      log_.Info("kube_node_usable", {{"node", name}, {"usable", info->usable()}, {"ready", info->ready}});
    }
    dirty_ = true;
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
    const json& topo = Sub(spec, "topology");
    if (topo.is_object()) {
      g.required_level = Str(topo, "required");
      g.preferred_level = Str(topo, "preferred");
    }
  }
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
    ++metrics_.jobs_finished;
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

// ---------------------------------------------------------------- the core

StatusOr<std::unique_ptr<scheduler::Scheduler>> KubeScheduler::NewScheduler(const cluster::Cluster& c) {
  BERTH_ASSIGN_OR_RETURN(framework::Profile profile, policies_.Find(options_.policy));
  profile.name = options_.policy;
  std::shared_ptr<const tenancy::QueueTree> queues = options_.queues;
  if (!queue_crds_.empty()) {
    auto tree = QueuesFromCrds(c);
    if (tree.ok()) {
      queues = *tree;
      queue_error_.clear();
    } else if (queue_error_ != tree.status().message()) {
      queue_error_ = tree.status().message();
      log_.Error("kube_queues_invalid", {{"error", queue_error_}, {"hint", "the previous queue tree stays in force"}});
      if (sched_) queues = current_queues_;
    }
  }
  current_queues_ = queues;
  if (options_.min_runtime >= 0) BERTH_RETURN_IF_ERROR(plugins::SetMinRuntime(profile, options_.min_runtime));
  if (queues) {
    for (auto* point : {&profile.admit, &profile.reserve})
      if (std::none_of(point->begin(), point->end(), [](const auto& r) { return r.name == "quota"; }))
        point->push_back(framework::PluginRef{"quota", {}});
  }
  framework::PluginContext context;
  context.cluster = &c;
  BERTH_ASSIGN_OR_RETURN(std::unique_ptr<framework::Framework> fw,
                         framework::Framework::Create(profile, plugins_, context));
  scheduler::SchedulerOptions so;
  so.seed = options_.seed;
  so.queues = queues;
  so.usage_half_life = options_.usage_half_life;
  so.preemption_grace = options_.preemption_grace;
  return std::make_unique<scheduler::Scheduler>(c, std::move(fw), std::move(so), clock_);
}

void KubeScheduler::OnQueue(const std::string& type, const json& obj) {
  const std::string name = Str(Sub(obj, "metadata"), "name");
  if (name.empty()) return;
  if (type == "DELETED") {
    queue_crds_.erase(name);
  } else {
    queue_crds_[name] = Sub(obj, "spec").is_object() ? Sub(obj, "spec") : json::object();
  }
  topology_dirty_ = true;  // a new tree means a new scheduler over the same placements
  dirty_ = true;
}

// The Queue objects written as a queue file (docs/queues.md; JSON is YAML)
// and read by the same parser, so both say the same things alike.
StatusOr<std::shared_ptr<const tenancy::QueueTree>> KubeScheduler::QueuesFromCrds(const cluster::Cluster& c) const {
  json file = {{"queues", json::array()}};
  for (const auto& [name, spec] : queue_crds_) {
    json q = {{"name", name}};
    if (spec.contains("parent") && spec["parent"].is_string() && !spec["parent"].get<std::string>().empty())
      q["parent"] = spec["parent"];
    if (spec.contains("weight")) q["weight"] = spec["weight"];
    if (spec.contains("tenants")) q["tenants"] = spec["tenants"];
    if (spec.contains("quotas") && spec["quotas"].is_object()) {
      json quotas = json::object();
      for (const auto& [type, quota] : spec["quotas"].items()) {
        json out = json::object();
        if (!quota.is_object()) return InvalidArgument("Queue " + name + ": spec.quotas." + type + ": expected an object");
        for (const auto& [k, v] : quota.items()) {
          const std::string key = k == "borrowLimit" ? "borrow_limit" : k == "lendLimit" ? "lend_limit" : k;
          out[key] = v;
        }
        quotas[type] = out;
      }
      q["quotas"] = quotas;
    }
    file["queues"].push_back(q);
  }
  const std::string text = file.dump(2);
  BERTH_ASSIGN_OR_RETURN(tenancy::QueueFile parsed, tenancy::ParseQueueYaml(text, "Queue objects"));
  BERTH_ASSIGN_OR_RETURN(tenancy::QueueTree tree, tenancy::BuildQueueTree(parsed, "Queue objects", c));
  return std::shared_ptr<const tenancy::QueueTree>(std::make_shared<tenancy::QueueTree>(std::move(tree)));
}

// A new cluster model from the nodes; every job is submitted again and the
// running ones adopted on their placements (by node name and GPU indexes).
void KubeScheduler::Rebuild() {
  topology_dirty_ = false;
  std::vector<NodeInfo> infos;
  infos.reserve(nodes_.size());
  for (const auto& [name, info] : nodes_) infos.push_back(info);
  auto built = BuildCluster(infos, options_.node_model);
  if (!built.ok()) {
    log_.Error("kube_cluster_invalid", {{"error", built.status().message()}});
    return;
  }
  auto next_cluster = std::make_unique<cluster::Cluster>(std::move(built).value());
  auto next = NewScheduler(*next_cluster);
  if (!next.ok()) {
    log_.Error("kube_scheduler_invalid", {{"error", next.status().message()}});
    return;
  }
  std::unique_ptr<scheduler::Scheduler> s = std::move(next).value();
  // Carry the jobs over, in id order.
  std::vector<int64_t> lost;
  for (auto& [id, job] : jobs_) {
    std::vector<framework::TaskPlacement> placements;
    if (job.running && sched_) {
      if (const auto* rec = sched_->Find(JobId(id))) {
        for (const auto& p : rec->placements) {
          auto n = next_cluster->FindNode(cluster_->node(p.alloc.node).name);
          if (!n) continue;  // the node is gone
          framework::TaskPlacement q = p;
          q.alloc.node = *n;
          placements.push_back(q);
        }
      }
    }
    job::JobSpec spec = job.spec;
    job::ResolveGpuTypes(spec, *next_cluster);
    Status sub = s->Submit(spec);
    if (sub.ok() && job.running) {
      if (placements.empty()) {
        sub = Internal("no placement left");
      } else {
        sub = s->Adopt(JobId(id), placements, clock_.Now());
      }
    }
    if (!sub.ok()) {
      log_.Warn("kube_job_dropped_on_rebuild", {{"job", id}, {"group", job.group}, {"error", sub.message()}});
      lost.push_back(id);
    }
  }
  // Placements are adopted on every node; then the unusable ones go down.
  for (NodeId n{0}; n.value() < next_cluster->num_nodes(); n = NodeId(n.value() + 1)) {
    const auto it = nodes_.find(next_cluster->node(n).name);
    if (it != nodes_.end() && !it->second.usable()) (void)s->SetNodeUp(n, false);
  }
  cluster_ = std::move(next_cluster);
  sched_ = std::move(s);
  for (int64_t id : lost) {
    auto jit = jobs_.find(id);
    if (jit == jobs_.end()) continue;
    if (jit->second.running) {
      // Its pods sit on nodes that left the model: they are evicted so their
      // owners make new ones; until they go they are not counted.
      for (const auto& uid : jit->second.pod_of_task) {
        auto p = pods_.find(uid);
        if (p == pods_.end()) continue;
        Enqueue(WriteOp::Make(WriteOp::Kind::kDelete, p->second.ns, p->second.name, uid));
        p->second.job = -1;
      }
      jobs_.erase(jit);
    } else {
      CancelPendingJob(id);
    }
  }
  // Bound pods that never made it into a job (unknown nodes before) get another look.
  for (const auto& [uid, p] : pods_)
    if (!p.node.empty() && p.job < 0 && !p.terminating) untracked_.insert(uid);
  dirty_ = true;
  log_.Info("kube_cluster", {{"summary", cluster_->Summary()}, {"jobs", jobs_.size()}});
}

// Bound pods Berth holds no task for (found at start, after a re-list, or
// bound by another scheduler) are adopted where they run, one job per group.
void KubeScheduler::AdoptUntracked() {
  if (!sched_) return;
  std::map<std::string, std::vector<PodEntry*>> by_group;
  std::vector<std::string> keep;
  for (const auto& uid : untracked_) {
    auto it = pods_.find(uid);
    if (it == pods_.end() || it->second.job >= 0 || it->second.node.empty()) continue;
    if (!cluster_->FindNode(it->second.node)) {
      keep.push_back(uid);  // a node Berth does not know yet
      continue;
    }
    by_group[GroupKey(it->second)].push_back(&it->second);
  }
  untracked_.clear();
  untracked_.insert(keep.begin(), keep.end());
  const state::ClusterState& st = sched_->state();
  for (auto& [key, members] : by_group) {
    std::sort(members.begin(), members.end(), [](const PodEntry* a, const PodEntry* b) {
      return NaturalLess(a->name, b->name);
    });
    JobEntry job;
    job.id = next_job_++;
    job.group = key;
    job.running = true;
    job.binds_sent = true;
    job.spec.id = JobId(job.id);
    job.spec.name = key;
    job.spec.tenant = members[0]->ns;
    job.spec.queue = members[0]->queue;
    job.spec.priority = members[0]->priority;
    std::vector<framework::TaskPlacement> placements;
    // Per node, GPUs taken by earlier members of this batch.
    std::map<int32_t, uint64_t> taken;
    for (PodEntry* p : members) {
      job::TaskGroup g;
      g.name = "pod-" + std::to_string(job.pod_of_task.size());
      g.count = 1;
      g.gpus = p->gpus;
      g.cpu_milli = p->cpu_milli;
      g.memory_mib = p->memory_mib;
      job.spec.groups.push_back(g);
      const NodeId n = *cluster_->FindNode(p->node);
      const auto& node = cluster_->node(n);
      uint64_t mask = ParseMask(p->gpu_annotation);
      const uint64_t all = node.gpu_count >= 64 ? ~uint64_t{0} : (uint64_t{1} << node.gpu_count) - 1;
      const uint64_t free = st.full_free_mask(n) & ~taken[n.value()];
      if (std::popcount(mask) != p->gpus || (mask & ~all) || (mask & ~free)) {
        mask = 0;  // not Berth's, or stale: take the lowest free GPUs
        for (int g2 = 0; g2 < node.gpu_count && std::popcount(mask) < p->gpus; ++g2)
          if (free & (uint64_t{1} << g2)) mask |= uint64_t{1} << g2;
      }
      taken[n.value()] |= mask;
      framework::TaskPlacement tp;
      tp.task = TaskKey{JobId(job.id), static_cast<int32_t>(job.pod_of_task.size())};
      tp.alloc.node = n;
      tp.alloc.gpu_mask = mask;
      tp.alloc.milli_per_gpu = mask ? kMilliPerGpu : 0;
      tp.alloc.cpu_milli = p->cpu_milli;
      tp.alloc.memory_mib = p->memory_mib;
      placements.push_back(tp);
      p->job = job.id;
      p->task = tp.task.index;
      job.pod_of_task.push_back(p->uid);
    }
    Status s = sched_->Submit(job.spec);
    // Pods run on cordoned or NotReady nodes too: such a node is up while
    // its pods are adopted.
    std::vector<NodeId> lifted;
    for (const auto& tp : placements)
      if (!st.up(tp.alloc.node) && std::find(lifted.begin(), lifted.end(), tp.alloc.node) == lifted.end()) {
        lifted.push_back(tp.alloc.node);
        (void)sched_->SetNodeUp(tp.alloc.node, true);
      }
    if (s.ok()) s = sched_->Adopt(JobId(job.id), placements, clock_.Now());
    for (NodeId n : lifted) (void)sched_->SetNodeUp(n, false);
    if (!s.ok()) {
      // Over capacity as Berth sees it (e.g. bound by another scheduler past
      // what the node offers): adopt pod by pod so what fits is counted.
      log_.Warn("kube_adopt_failed", {{"group", key}, {"pods", members.size()}, {"error", s.message()}});
      (void)sched_->Finish(JobId(job.id), JobState::kCancelled);
      for (PodEntry* p : members) p->job = -1;
      if (members.size() > 1) {
        for (PodEntry* p : members) {
          // A lone key makes each its own job on the next round.
          p->group.clear();
          untracked_.insert(p->uid);
        }
      }
      continue;
    }
    log_.Info("kube_adopted", {{"group", key}, {"job", job.id}, {"pods", members.size()}});
    jobs_.emplace(job.id, std::move(job));
  }
}

// Pending pods of Berth's scheduler become jobs: a lone pod at once, a gang
// once at least its minimum number of members exist (bound ones count).
void KubeScheduler::FormJobs() {
  std::map<std::string, std::vector<PodEntry*>> waiting;  // group -> pending pods not in a job
  std::map<std::string, int32_t> bound_members;
  for (auto& [uid, p] : pods_) {
    if (p.scheduler != options_.scheduler_name) continue;
    if (!p.node.empty() || p.binding) {
      if (!p.group.empty()) ++bound_members[p.group];
      continue;
    }
    if (p.terminating || p.job >= 0) continue;
    waiting[GroupKey(p)].push_back(&p);
  }
  for (auto& [key, members] : waiting) {
    if (pending_job_of_group_.count(key)) continue;  // one pending job per group at a time
    PodEntry& first = *members[0];
    const int32_t need = MinMember(first);
    const int32_t have = static_cast<int32_t>(members.size()) + (first.group.empty() ? 0 : bound_members[first.group]);
    if (have < need) continue;
    std::sort(members.begin(), members.end(), [](const PodEntry* a, const PodEntry* b) {
      if (a->gpus != b->gpus) return a->gpus > b->gpus;  // workers (the GPU shape) first, then helpers
      return NaturalLess(a->name, b->name);
    });
    JobEntry job;
    job.id = next_job_++;
    job.group = key;
    job.spec.id = JobId(job.id);
    job.spec.name = key;
    job.spec.tenant = first.ns;
    job.spec.queue = first.queue;
    job.spec.priority = first.priority;
    std::string required = first.required_level, preferred = first.preferred_level;
    for (const char* kind : {"berth-podgroup:", "volcano-podgroup:"}) {
      auto g = pod_groups_.find(kind + first.group);
      if (g == pod_groups_.end()) continue;
      if (!g->second.queue.empty()) job.spec.queue = g->second.queue;
      if (!g->second.required_level.empty()) required = g->second.required_level;
      if (!g->second.preferred_level.empty()) preferred = g->second.preferred_level;
    }
    if (auto l = cluster::ParseLevel(required)) job.spec.required_level = *l;
    if (auto l = cluster::ParseLevel(preferred)) job.spec.preferred_level = *l;
    for (PodEntry* p : members) {
      job::TaskGroup* last = job.spec.groups.empty() ? nullptr : &job.spec.groups.back();
      if (last && last->gpus == p->gpus && last->cpu_milli == p->cpu_milli && last->memory_mib == p->memory_mib) {
        ++last->count;
      } else {
        job::TaskGroup g;
        g.name = "group-" + std::to_string(job.spec.groups.size());
        g.count = 1;
        g.gpus = p->gpus;
        g.cpu_milli = p->cpu_milli;
        g.memory_mib = p->memory_mib;
        job.spec.groups.push_back(g);
      }
      p->job = job.id;
      p->task = static_cast<int32_t>(job.pod_of_task.size());
      job.pod_of_task.push_back(p->uid);
    }
    job::ResolveGpuTypes(job.spec, *cluster_);
    Status s = job::ValidateJob(job.spec);
    if (s.ok()) s = sched_->Submit(job.spec);
    if (!s.ok()) {
      for (PodEntry* p : members) {
        p->job = -1;
        if (options_.pod_conditions && p->shown_reason != s.message()) {
          p->shown_reason = s.message();
          Enqueue(WriteOp::Make(WriteOp::Kind::kCondition, p->ns, p->name, p->uid, "", "", "berth: " + s.message()));
        }
      }
      continue;
    }
    pending_job_of_group_[key] = job.id;
    jobs_.emplace(job.id, std::move(job));
  }
}

void KubeScheduler::Pass() {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<JobId> started = sched_->Schedule();
  ++metrics_.scheduling_passes;
  for (JobId victim : sched_->preempted_in_last_pass()) {
    // Kubernetes owns the victim's pods: they are evicted (their grace period
    // is the checkpoint signal) and their owners make new ones; Berth keeps
    // no requeued copy of the job.
    auto jit = jobs_.find(victim.value());
    if (jit == jobs_.end()) continue;
    ++metrics_.preemptions;
    (void)sched_->Finish(victim, JobState::kCancelled);
    for (const auto& uid : jit->second.pod_of_task) {
      auto p = pods_.find(uid);
      if (p == pods_.end()) continue;
      Enqueue(WriteOp::Make(WriteOp::Kind::kEvict, p->second.ns, p->second.name, uid));
      ++evictions_;
    }
    log_.Info("kube_preempted", {{"group", jit->second.group}, {"job", victim.value()}});
    // The preemptor holds the victims' GPUs in Berth's view from now on, so
    // nothing else is placed there (no cascade); it binds once they are gone.
    for (const auto& uid : jit->second.pod_of_task) {
      auto p = pods_.find(uid);
      if (p != pods_.end()) {
        p->second.job = -1;
        p->second.terminating = true;
      }
    }
    for (JobId s : started) {
      auto sj = jobs_.find(s.value());
      if (sj == jobs_.end()) continue;
      for (const auto& uid : jit->second.pod_of_task)
        if (pods_.count(uid)) sj->second.waiting_for.insert(uid);
    }
    jobs_.erase(jit);
  }
  for (JobId id : started) {
    auto jit = jobs_.find(id.value());
    if (jit == jobs_.end()) continue;
    AfterStart(jit->second);
  }
  // Jobs held for their victims bind once those pods are gone.
  for (auto& [id, job] : jobs_)
    if (job.running && !job.binds_sent && job.waiting_for.empty()) SendBinds(job);
  UpdateWaiting();
  if (!started.empty()) {
    metrics_.decisions += started.size();
    metrics_.decision_latency.Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  metrics_.pass_latency.Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

void KubeScheduler::AfterStart(JobEntry& job) {
  job.running = true;
  if (auto g = pending_job_of_group_.find(job.group); g != pending_job_of_group_.end() && g->second == job.id)
    pending_job_of_group_.erase(g);
  dirty_ = true;  // the group may have more pods waiting
  if (job.waiting_for.empty()) SendBinds(job);
  GroupStatus(job.group, "Running", static_cast<int64_t>(job.pod_of_task.size()),
              "berth: " + std::to_string(job.pod_of_task.size()) + " pods placed");
}

void KubeScheduler::GroupStatus(const std::string& group, const std::string& phase, int64_t scheduled,
                                const std::string& message) {
  if (!pod_groups_.count("berth-podgroup:" + group)) return;  // only Berth's own PodGroup objects
  const std::string shown = phase + "|" + std::to_string(scheduled) + "|" + message;
  auto& last = group_status_shown_[group];
  if (last == shown) return;
  last = shown;
  const auto slash = group.find('/');
  Enqueue(WriteOp::Make(WriteOp::Kind::kGroupStatus, group.substr(0, slash), group.substr(slash + 1), "", phase,
                        std::to_string(scheduled), message));
}

void KubeScheduler::SendBinds(JobEntry& job) {
  job.binds_sent = true;
  const auto* rec = sched_->Find(JobId(job.id));
  if (!rec) return;
  for (const auto& p : rec->placements) {
    const std::string& uid = job.pod_of_task[p.task.index];
    auto pit = pods_.find(uid);
    if (pit == pods_.end()) continue;
    PodEntry& pod = pit->second;
    pod.binding = true;
    const std::string node = cluster_->node(p.alloc.node).name;
    Enqueue(WriteOp::Make(WriteOp::Kind::kBind, pod.ns, pod.name, uid, node, MaskText(p.alloc.gpu_mask), "", job.id));
  }
  log_.Info("kube_placed", {{"group", job.group}, {"job", job.id}, {"pods", rec->placements.size()}});
}

void KubeScheduler::OnBindDone(const WriteOp& op, const Status& s) {
  auto pit = pods_.find(op.uid);
  if (s.ok()) {
    ++binds_ok_;
    if (pit != pods_.end()) {
      pit->second.binding = false;
      if (pit->second.node.empty()) pit->second.node = op.node;
    }
    return;
  }
  ++binds_failed_;
  log_.Warn("kube_bind_failed", {{"pod", op.ns + "/" + op.name}, {"node", op.node}, {"error", s.message()}});
  if (pit == pods_.end()) return;  // gone: the watch released it
  // The pod could not be bound: its task is released and it waits again.
  PodEntry& p = pit->second;
  p.binding = false;
  if (p.node.empty()) {
    PodGone(p, JobState::kCancelled);
    p.job = -1;
    p.task = -1;
  }
  dirty_ = true;
}

// Waiting pods learn why (a condition and an event), at most once per interval.
void KubeScheduler::UpdateWaiting() {
  if (!options_.pod_conditions) return;
  const TimeUs now = clock_.Now();
  for (const auto& [key, id] : pending_job_of_group_) {
    const auto* rec = sched_->Find(JobId(id));
    auto jit = jobs_.find(id);
    if (!rec || jit == jobs_.end() || rec->last_verdict.reason.empty()) continue;
    const std::string message = "berth: " + rec->last_verdict.reason;
    GroupStatus(key, rec->last_verdict.code == framework::VerdictCode::kUnresolvable ? "Unschedulable" : "Pending", 0,
                message);
    for (const auto& uid : jit->second.pod_of_task) {
      auto p = pods_.find(uid);
      if (p == pods_.end()) continue;
      PodEntry& pod = p->second;
      if (pod.shown_reason == message || now - pod.shown_at < options_.condition_interval) continue;
      pod.shown_reason = message;
      pod.shown_at = now;
      Enqueue(WriteOp::Make(WriteOp::Kind::kCondition, pod.ns, pod.name, uid, "", "", message));
    }
  }
}

// A node that turned NotReady: gangs with a pod there are broken; all their
// pods are evicted so no partial gang holds GPUs (owners re-create them).
void KubeScheduler::NodeLost(NodeId node, const std::string& reason) {
  for (auto& [id, job] : jobs_) {
    if (!job.running) continue;
    const auto* rec = sched_->Find(JobId(id));
    if (!rec) continue;
    bool hit = false;
    for (const auto& p : rec->placements) hit = hit || p.alloc.node == node;
    if (!hit) continue;
    ++metrics_.node_failures;
    log_.Warn("kube_gang_lost_node", {{"group", job.group}, {"job", id}, {"reason", reason}});
    for (const auto& uid : job.pod_of_task) {
      auto p = pods_.find(uid);
      if (p != pods_.end()) Enqueue(WriteOp::Make(WriteOp::Kind::kEvict, p->second.ns, p->second.name, uid));
    }
  }
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
                     {"usable", it != nodes_.end() && it->second.usable()}});
    }
  });
  return out;
}

json KubeScheduler::PodsJson() {
  json out = json::array();
  Sync([&] {
    for (const auto& [uid, p] : pods_) {
      if (p.scheduler != options_.scheduler_name && p.job < 0) continue;
      out.push_back({{"namespace", p.ns}, {"name", p.name}, {"uid", uid}, {"node", p.node}, {"group", p.group},
                     {"job", p.job}, {"task", p.task}, {"reason", p.shown_reason}});
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
    out += "# HELP berth_gpus Whole GPUs in the cluster model.\n# TYPE berth_gpus gauge\nberth_gpus " +
           std::to_string(total) + "\n";
    out += "# HELP berth_gpus_allocated GPUs held by pods (fractional in thousandths).\n";
    out += "# TYPE berth_gpus_allocated gauge\nberth_gpus_allocated " + std::to_string(used / 1000.0) + "\n";
    out += "# HELP berth_jobs Jobs by state.\n# TYPE berth_jobs gauge\n";
    out += "berth_jobs{state=\"pending\"} " + std::to_string(pending) + "\n";
    out += "berth_jobs{state=\"running\"} " + std::to_string(running) + "\n";
    out += "# HELP berth_kube_pods Pods Berth tracks.\n# TYPE berth_kube_pods gauge\nberth_kube_pods " +
           std::to_string(pods_.size()) + "\n";
  });
  std::string hist;
  metrics_.pass_latency.Render("berth_scheduling_pass_seconds", "Wall time of one scheduling pass.", hist);
  return out + hist;
}

}  // namespace berth::kube
