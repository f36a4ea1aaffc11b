// The Kubernetes extender verbs on the scheduling core. A pod group (or a
// lone pod) becomes one Berth job whose task count is the group's minimum
// member count; the first filter call of a group places the whole gang, and
// each pod of the group is then steered to the node of its task. Extender
// jobs live in memory only (Kubernetes holds the truth about pods).
//
// Lifetime of a group: created at its first filter call; marked bound when
// one of its pods binds (bind verb, or ExtenderPodBound from a watch); ended
// when every pod Berth knew of it is gone (ExtenderPodGone), when a lone pod
// is replaced by a new pod of the same name (a new uid is a new job), or,
// never bound, after extender_reservation_ttl. In a bound group, a pod that
// never bound and was not asked for during the TTL is dropped (its task goes
// to the next pod that asks). A bound group lives as long as its pods: only
// the bind verb (which creates a real Binding) and the watch mark pods bound.
//
// Trust: with ServiceOptions::k8s_pods (berth serve --extender watches the
// API server), filter, bind and preempt work on the API server's copy of the
// pod and refuse what they cannot verify (extender_verify.h). Always: names
// over the limits are refused, and at most extender_limits.max_groups groups
// and max_pods pods are tracked.
#include <algorithm>

#include "berth/json/json_parse.h"
#include "berth/server/extender.h"
#include "berth/server/pod_service.h"
#include "berth/server/records.h"
#include "berth/server/service.h"

namespace berth::server {

using job::JobState;
using nlohmann::json;

namespace {

// Extender bodies come from anyone who can reach the port: the bounded parser
// (16 MiB, 64 levels, no duplicate keys) before anything else looks at them.
StatusOr<json> ParseBody(const std::string& body) { return berth::json::ParseUntrusted(body); }

k8s::FilterResult FilterError(std::string message) {
  k8s::FilterResult r;
  r.error = std::move(message);
  return r;
}

// "ns/GROUP" for a gang; "ns/pod:NAME" for a lone pod (whose group also
// records the uid: a new uid under the same name is a new pod).
std::string GroupKey(const k8s::Pod& pod) {
  const std::string g = pod.group_name();
  return pod.ns + "/" + (g.empty() ? "pod:" + pod.name : g);
}

// A pod that states its gang's size (rather than defaulting to 1).
bool ClaimsSize(const k8s::Pod& pod) {
  return pod.annotations.count("berth.dev/min-member") || pod.annotations.count("kueue.x-k8s.io/pod-group-total-count") ||
         pod.labels.count("pod-group.scheduling.sigs.k8s.io/min-available");
}

// Records a node the pod cannot use. Every reason goes to failedNodes, the
// only map kube-scheduler 1.20 reads; those preemption cannot help also go to
// failedAndUnresolvableNodes, which 1.21+ reads and prefers.
void FailNode(k8s::FilterResult& out, const std::string& node, const std::string& why, bool unresolvable) {
  out.failed_nodes[node] = why;
  if (unresolvable) out.failed_and_unresolvable[node] = why;
}

}  // namespace

Status Service::VerifyPod(k8s::Pod& pod) {
  if (!options_.k8s_pods) return Status::Ok();  // no API server: taken as sent
  StatusOr<k8s::Pod> real = VerifyExtenderPod(pod, *options_.k8s_pods, options_.extender_scheduler_names);
  Status s = real.status();
  if (real.ok()) {
    StatusOr<int32_t> size = VerifyGroupSize(*real, *options_.k8s_pods);
    s = size.status();
  }
  if (!s.ok()) {
    log_.Warn("extender_pod_refused", {{"pod", pod.ns + "/" + pod.name}, {"uid", pod.uid}, {"error", s.message()}});
    return s;
  }
  pod = std::move(real).value();
  return Status::Ok();
}

std::string Service::ExtenderPlannedNode(const JobEntry& e, int32_t task) const {
  if (e.state != JobState::kRunning || task < 0) return "";
  for (const auto& p : e.placements)
    if (p.task.index == task) return cluster_->node(p.alloc.node).name;
  return "";
}

std::optional<std::pair<std::string, std::string>> Service::FindExtenderPod(const std::string& ns,
                                                                           const std::string& name,
                                                                           const std::string& uid) const {
  if (!uid.empty()) {
    auto it = ext_group_of_pod_.find(uid);
    if (it != ext_group_of_pod_.end()) return std::pair{it->second, uid};
  }
  // Without a known uid: the pod of that name in that namespace, if one.
  const std::string prefix = (ns.empty() ? std::string("default") : ns) + "/";
  for (const auto& [key, g] : ext_groups_) {
    if (key.compare(0, prefix.size(), prefix) != 0) continue;
    for (const auto& [puid, p] : g.pods)
      if (p.name == name && (uid.empty() || puid == uid)) return std::pair{key, puid};
  }
  return std::nullopt;
}

void Service::EndExtenderGroup(const std::string& key, JobState state, const std::string& reason) {
  auto git = ext_groups_.find(key);
  if (git == ext_groups_.end()) return;
  const int64_t id = git->second.job;
  for (const auto& [uid, p] : git->second.pods) {
    auto it = ext_group_of_pod_.find(uid);
    if (it != ext_group_of_pod_.end() && it->second == key) ext_group_of_pod_.erase(it);
  }
  auto it = jobs_.find(id);
  if (it != jobs_.end() && !job::IsTerminal(it->second.state)) {
    JobEntry& e = it->second;
    const JobState final_state = e.state == JobState::kRunning ? state : JobState::kCancelled;
    (void)sched_->Finish(JobId(id), final_state);
    pending_.erase(id);
    running_.erase(id);
    e.state = final_state;
    e.finished_at = clock_.Now();
    e.end_reason = reason;
    e.placements.clear();
    MarkView(e);
    dirty_ = true;  // freed GPUs: waiting jobs get a pass
    log_.Info("extender_job_ended",
              {{"group", key}, {"job", id}, {"state", job::JobStateName(final_state)}, {"reason", reason}});
  }
  ext_group_of_job_.erase(id);
  ext_groups_.erase(git);
}

void Service::ExpireExtenderReservations() {
  if (ext_groups_.empty()) return;
  const TimeUs now = clock_.Now();
  if (now < next_expiry_check_) return;
  next_expiry_check_ = now + kUsPerSecond;
  std::vector<std::pair<std::string, std::string>> expired;  // key, reason
  for (const auto& [key, g] : ext_groups_) {
    auto it = jobs_.find(g.job);
    if (it == jobs_.end() || job::IsTerminal(it->second.state)) {
      expired.emplace_back(key, "");
      continue;
    }
    if (g.bound) continue;  // its stale unbound pods are dropped below
    const bool binding = std::any_of(g.pods.begin(), g.pods.end(), [](const auto& p) { return p.second.binding; });
    if (binding) continue;
    const JobEntry& e = it->second;
    if (e.state == JobState::kRunning && now - e.started_at > options_.extender_reservation_ttl)
      expired.emplace_back(key, "extender reservation expired unbound");
    else if (e.state == JobState::kPending && now - g.last_seen > options_.extender_reservation_ttl)
      expired.emplace_back(key, "extender group not asked for since it waited");
  }
  for (const auto& [key, reason] : expired) {
    if (!reason.empty()) log_.Info("extender_reservation_expired", {{"group", key}, {"job", ext_groups_[key].job}});
    EndExtenderGroup(key, JobState::kCancelled, reason);
  }
  // Bound groups: a pod that never bound and was not asked for during the
  // TTL holds its task no longer (e.g. a pod that was deleted unseen).
  for (auto& [key, g] : ext_groups_) {
    if (!g.bound) continue;
    for (auto p = g.pods.begin(); p != g.pods.end();) {
      if (!p->second.bound && !p->second.binding && now - p->second.last_seen > options_.extender_reservation_ttl) {
        log_.Info("extender_pod_expired", {{"group", key}, {"pod", p->second.name}, {"task", p->second.task}});
        auto it = ext_group_of_pod_.find(p->first);
        if (it != ext_group_of_pod_.end() && it->second == key) ext_group_of_pod_.erase(it);
        p = g.pods.erase(p);
      } else {
        ++p;
      }
    }
  }
}

ApiResult Service::ExtenderFilter(const std::string& body) {
  auto doc = ParseBody(body);
  if (!doc.ok()) return {400, k8s::ToJson(FilterError(doc.status().message()))};
  auto args = k8s::ParseExtenderArgs(std::move(*doc));
  if (!args.ok()) return {400, k8s::ToJson(FilterError(args.status().message()))};
  if (!ready_) return {503, k8s::ToJson(FilterError("berth is not ready"))};
  auto shared = std::make_shared<k8s::ExtenderArgs>(std::move(args).value());
  {
    // Checks off the scheduling thread: sizes, then the API server's copy.
    auto refuse = [&](const std::string& why, bool unresolvable) -> ApiResult {
      k8s::FilterResult out;
      for (const auto& n : shared->CandidateNames()) FailNode(out, n, why, unresolvable);
      return {200, k8s::ToJson(out)};
    };
    if (Status sz = CheckPodSizes(shared->pod, options_.extender_limits); !sz.ok()) return refuse(sz.message(), true);
    if (Status v = VerifyPod(shared->pod); !v.ok()) return refuse(v.message(), v.code() != StatusCode::kUnavailable);
  }
  auto r = Call<ApiResult>([this, shared]() -> ApiResult {
    const k8s::ExtenderArgs& a = *shared;
    const k8s::Pod& pod = a.pod;
    const std::vector<std::string> names = a.CandidateNames();
    k8s::FilterResult out;
    auto fail_all = [&](const std::string& why, bool unresolvable) {
      for (const auto& n : names) FailNode(out, n, why, unresolvable);
    };
    const std::string key = GroupKey(pod);
    const std::string pod_ref = pod.ns + "/" + pod.name;
    const ExtenderLimits& limits = options_.extender_limits;
    if (static_cast<int64_t>(ext_groups_.size()) >= limits.max_groups ||
        static_cast<int64_t>(ext_group_of_pod_.size()) >= limits.max_pods) {
      next_expiry_check_ = 0;  // at a cap: drop ended and expired groups first
      ExpireExtenderReservations();
    }
    if (!ext_group_of_pod_.count(pod.uid) && static_cast<int64_t>(ext_group_of_pod_.size()) >= limits.max_pods) {
      fail_all("berth: already tracking " + std::to_string(ext_group_of_pod_.size()) +
                   " pods (--extender-max-pods); retry once pods end", false);
      return {200, k8s::ToJson(out)};
    }
    auto git = ext_groups_.find(key);
    if (git != ext_groups_.end()) {
      auto jt = jobs_.find(git->second.job);
      if (jt == jobs_.end() || job::IsTerminal(jt->second.state)) {
        // Cancelled by hand or failed: a new filter call starts over.
        EndExtenderGroup(key, JobState::kCancelled, "");
        git = ext_groups_.end();
      }
    }
    if (git != ext_groups_.end() && !git->second.pods.count(pod.uid)) {
      // A new uid under a name the group knows: the old pod is gone
      // (names are unique within a namespace), e.g. a StatefulSet re-created it.
      ExtGroup& g = git->second;
      auto same = std::find_if(g.pods.begin(), g.pods.end(), [&](const auto& p) { return p.second.name == pod.name; });
      if (same != g.pods.end()) {
        const std::string old_uid = same->first;
        log_.Info("extender_pod_replaced", {{"pod", pod_ref}, {"old_uid", old_uid}, {"uid", pod.uid}});
        if (g.lone) {
          EndExtenderGroup(key, JobState::kSucceeded, "pod " + pod_ref + " was replaced (new uid " + pod.uid + ")");
          git = ext_groups_.end();
        } else {
          // The new pod takes over the old one's task, unbound.
          ExtPod p;
          p.name = pod.name;
          p.task = same->second.task;
          g.pods.erase(same);
          ext_group_of_pod_.erase(old_uid);
          g.pods.emplace(pod.uid, std::move(p));
          ext_group_of_pod_[pod.uid] = key;
        }
      }
    }
    if (git != ext_groups_.end() && !git->second.lone && ClaimsSize(pod)) {
      const JobEntry& je = jobs_.at(git->second.job);
      if (pod.min_member() != je.spec.num_tasks()) {
        fail_all("berth: pod " + pod_ref + " claims a gang of " + std::to_string(pod.min_member()) + " pods, but gang " +
                     key + " has " + std::to_string(je.spec.num_tasks()),
                 true);
        return {200, k8s::ToJson(out)};
      }
    }
    if (git == ext_groups_.end() && static_cast<int64_t>(ext_groups_.size()) >= limits.max_groups) {
      fail_all("berth: already tracking " + std::to_string(ext_groups_.size()) +
                   " pod groups (--extender-max-groups); retry once groups end", false);
      return {200, k8s::ToJson(out)};
    }
    if (git == ext_groups_.end()) {
      job::JobSpec spec;
      spec.name = key;
      spec.tenant = pod.ns;
      spec.queue = pod.queue();
      spec.priority = pod.priority;
      job::TaskGroup g;
      g.name = "pods";
      g.count = pod.min_member();
      g.gpus = pod.gpus;
      g.cpu_milli = pod.cpu_milli;
      g.memory_mib = pod.memory_mib;
      StatusOr<MiB> gpu_memory = pod.gpu_memory_mib();
      if (!gpu_memory.ok()) {
        fail_all("berth: pod " + pod_ref + ": " + gpu_memory.status().message(), true);
        return {200, k8s::ToJson(out)};
      }
      g.gpu_memory_mib = *gpu_memory;  // placed only where each GPU has that much memory
      spec.groups.push_back(g);
      // A Deployment's pod (or one labelled berth.dev/service) is a service
      // replica: guaranteed capacity, the reservation (pod_service.h).
      StatusOr<k8s::PodService> service = k8s::ServiceOfPod(pod);
      if (!service.ok()) {
        fail_all("berth: " + service.status().message(), true);
        return {200, k8s::ToJson(out)};
      }
      JobId service_id;
      if (service->replica()) {
        auto [sid, added] = ext_service_ids_.try_emplace(service->name, 0);
        if (added) sid->second = next_id_++;
        service_id = JobId(sid->second);
        int32_t active = 0;
        for (const auto& [gkey, grp] : ext_groups_)
          if (auto j = jobs_.find(grp.job); j != jobs_.end() && !job::IsTerminal(j->second.state) &&
                                            j->second.spec.replica_of == service_id)
            ++active;
        k8s::MakeReplica(*service, service_id, active, spec);
      } else {
        k8s::MakeReplica(*service, JobId(), 0, spec);  // best effort, if so annotated
      }
      Status ok = job::ValidateJob(spec);
      if (ok.ok()) ok = CheckFeasible(*cluster_, spec);
      if (!ok.ok()) {
        fail_all("berth: " + ok.message(), true);
        return {200, k8s::ToJson(out)};
      }
      JobEntry e;
      e.id = next_id_++;
      e.key = "k8s:" + key + (pod.group_name().empty() ? ":" + pod.uid : "");
      e.spec = spec;
      e.spec.id = JobId(e.id);
      e.accepted_at = clock_.Now();
      e.durable = true;
      e.extender = true;
      Status sub = sched_->Submit(e.spec);
      if (!sub.ok()) {
        fail_all("berth: " + sub.message(), true);
        return {200, k8s::ToJson(out)};
      }
      ExtGroup grp;
      grp.job = e.id;
      grp.lone = pod.group_name().empty();
      pending_.insert(e.id);
      ext_group_of_job_[e.id] = key;
      log_.Info("extender_job", {{"group", key}, {"job", e.id}, {"tasks", g.count}, {"gpus", g.gpus},
                                 {"service", service->name}, {"priority", e.spec.priority}});
      jobs_.emplace(e.id, std::move(e));
      git = ext_groups_.emplace(key, std::move(grp)).first;
      dirty_ = true;
    }
    ExtGroup& grp = git->second;
    grp.last_seen = clock_.Now();
    MarkView(grp.job);  // its pods, shown with the job
    const std::string who = grp.lone ? "pod " + pod_ref : "gang " + key;  // in the reasons
    JobEntry& e = jobs_.at(grp.job);
    auto [pit, inserted] = grp.pods.try_emplace(pod.uid);
    ExtPod& me = pit->second;
    if (inserted) {
      me.name = pod.name;
      ext_group_of_pod_[pod.uid] = key;
    }
    me.last_seen = grp.last_seen;
    if (e.state == JobState::kPending) SchedulePass();  // answer now, not on the next tick
    if (e.state != JobState::kRunning) {
      const scheduler::JobRecord* rec = sched_->Find(JobId(e.id));
      const bool never = e.state == JobState::kFailed ||
                         (rec && rec->last_verdict.code == framework::VerdictCode::kUnresolvable);
      std::string why = rec && !rec->last_verdict.reason.empty() ? rec->last_verdict.reason : job::JobStateName(e.state);
      fail_all("berth: " + who + " does not fit: " + why, never);
      return {200, k8s::ToJson(out)};
    }
    // The pod's task: the one it had, else the lowest task no pod holds yet.
    if (me.task < 0) {
      std::vector<uint8_t> taken(e.spec.num_tasks(), 0);
      for (const auto& [uid, p] : grp.pods)
        if (p.task >= 0 && p.task < e.spec.num_tasks()) taken[p.task] = 1;
      for (int32_t t = 0; t < e.spec.num_tasks(); ++t)
        if (!taken[t]) {
          me.task = t;
          break;
        }
      if (me.task < 0) {
        fail_all("berth: gang " + key + " already has its " + std::to_string(e.spec.num_tasks()) + " pods", false);
        return {200, k8s::ToJson(out)};
      }
    }
    const std::string target = ExtenderPlannedNode(e, me.task);
    std::vector<std::string> pass;
    for (const auto& n : names) {
      if (n == target) {
        pass.push_back(n);
      } else if (!cluster_->FindNode(n)) {
        FailNode(out, n, "berth: node unknown to berth", true);
      } else {
        FailNode(out, n,
                 "berth: " + (grp.lone ? who : "task " + std::to_string(me.task) + " of " + who) + " is placed on " +
                     target,
                 false);
      }
    }
    if (a.node_names) out.node_names = pass;
    if (a.nodes) {
      // The NodeList with only the passing node: every member but the items,
      // and of the items only that one (nothing else is copied).
      json list = json::object();
      for (auto it = a.nodes->begin(); it != a.nodes->end(); ++it)
        if (it.key() != "items") list[it.key()] = it.value();
      json items = json::array();
      if (auto it = a.nodes->find("items"); it != a.nodes->end() && it->is_array())
        for (const auto& item : *it)
          if (auto md = item.is_object() ? item.find("metadata") : item.end();
              md != item.end() && md->is_object()) {
            auto name = md->find("name");
            if (name != md->end() && name->is_string() && name->get_ref<const std::string&>() == target)
              items.push_back(item);
          }
      list["items"] = std::move(items);
      out.nodes = std::move(list);
    }
    return {200, k8s::ToJson(out)};
  });
  return r ? *r : ApiResult{503, k8s::ToJson(FilterError("berth did not answer in time"))};
}

ApiResult Service::ExtenderPrioritize(const std::string& body) {
  auto doc = ParseBody(body);
  if (!doc.ok()) return ApiResult::Error(400, doc.status().message());
  auto args = k8s::ParseExtenderArgs(std::move(*doc));
  if (!args.ok()) return ApiResult::Error(400, args.status().message());
  auto shared = std::make_shared<k8s::ExtenderArgs>(std::move(args).value());
  auto r = Call<ApiResult>([this, shared]() -> ApiResult {
    const k8s::Pod& pod = shared->pod;
    std::string target;
    auto git = ext_groups_.find(GroupKey(pod));
    if (git != ext_groups_.end()) {
      auto p = git->second.pods.find(pod.uid);
      if (p != git->second.pods.end()) target = ExtenderPlannedNode(jobs_.at(git->second.job), p->second.task);
    }
    std::vector<k8s::HostPriority> list;
    for (const auto& n : shared->CandidateNames())
      list.push_back({n, !target.empty() && n == target ? k8s::kMaxExtenderPriority : 0});
    return {200, k8s::ToJson(list)};
  });
  return r ? *r : ApiResult::Error(503, "berth did not answer in time");
}

ApiResult Service::ExtenderBind(const std::string& body) {
  auto doc = ParseBody(body);
  if (!doc.ok()) return {400, k8s::ToJson(k8s::BindingResult{doc.status().message()})};
  auto args = k8s::ParseBindingArgs(*doc);
  if (!args.ok()) return {400, k8s::ToJson(k8s::BindingResult{args.status().message()})};
  const k8s::BindingArgs a = *args;
  const std::string pod_ref = a.pod_namespace + "/" + a.pod_name;
  {
    k8s::Pod claimed;
    claimed.name = a.pod_name;
    claimed.ns = a.pod_namespace;
    claimed.uid = a.pod_uid;
    if (Status sz = CheckPodSizes(claimed, options_.extender_limits); !sz.ok())
      return {200, k8s::ToJson(k8s::BindingResult{sz.message()})};
    if (Status v = VerifyPod(claimed); !v.ok()) return {200, k8s::ToJson(k8s::BindingResult{v.message()})};
  }
  const bool can_bind = static_cast<bool>(options_.k8s_bind);
  // On the loop: the pod must be planned on that node; then it is marked as
  // binding so that its reservation cannot expire while the Binding is made.
  struct Check {
    std::string error, key, uid;
  };
  auto check = Call<Check>([this, a, pod_ref, can_bind]() -> Check {
    auto found = FindExtenderPod(a.pod_namespace, a.pod_name, a.pod_uid);
    if (!found) return {"berth: no placement for pod " + pod_ref + " (its filter call did not go through berth)"};
    const auto& [key, uid] = *found;
    ExtGroup& grp = ext_groups_.at(key);
    ExtPod& p = grp.pods.at(uid);
    const JobEntry& e = jobs_.at(grp.job);
    const std::string planned = ExtenderPlannedNode(e, p.task);
    if (planned.empty()) return {"berth: gang " + key + " holds no placement for pod " + pod_ref + " now"};
    if (planned != a.node) return {"berth: pod " + pod_ref + " is placed on " + planned + ", not " + a.node};
    if (!can_bind)
      return {"berth: cannot create the Binding of pod " + pod_ref +
              ": no Kubernetes API server is configured; leave bindVerb out of the kube-scheduler "
              "configuration so that kube-scheduler binds"};
    p.binding = true;
    return {"", key, uid};
  });
  if (!check) return {503, k8s::ToJson(k8s::BindingResult{"berth did not answer in time"})};
  if (!check->error.empty()) return {200, k8s::ToJson(k8s::BindingResult{check->error})};
  // The API call, on this (HTTP) thread: the loop goes on meanwhile.
  Status bound = options_.k8s_bind(a.pod_namespace, a.pod_name, a.pod_uid, a.node);
  const std::string key = check->key, uid = check->uid;
  (void)Call<bool>([this, key, uid, a, pod_ref, bound]() {
    auto git = ext_groups_.find(key);
    if (git == ext_groups_.end()) return false;
    auto p = git->second.pods.find(uid);
    if (p == git->second.pods.end()) return false;
    p->second.binding = false;
    if (!bound.ok()) {
      log_.Warn("extender_bind_failed", {{"pod", pod_ref}, {"node", a.node}, {"error", bound.message()}});
      return false;
    }
    p->second.bound = true;
    p->second.node = a.node;
    git->second.bound = true;
    MarkView(git->second.job);
    log_.Info("extender_bind", {{"pod", pod_ref}, {"node", a.node}, {"job", git->second.job}});
    return true;
  });
  if (!bound.ok())
    return {200, k8s::ToJson(k8s::BindingResult{"berth: binding pod " + pod_ref + " to " + a.node + ": " +
                                                bound.message()})};
  return {200, k8s::ToJson(k8s::BindingResult{})};
}

void Service::ExtenderPodBound(const std::string& ns, const std::string& name, const std::string& uid,
                               const std::string& node) {
  Post([this, ns, name, uid, node] {
    auto found = FindExtenderPod(ns, name, uid);
    const std::string pod_ref = (ns.empty() ? "default" : ns) + "/" + name;
    if (!found) {
      log_.Info("extender_bound_unknown_pod", {{"pod", pod_ref}, {"uid", uid}, {"node", node}});
      return;
    }
    ExtGroup& grp = ext_groups_.at(found->first);
    ExtPod& p = grp.pods.at(found->second);
    const std::string planned = ExtenderPlannedNode(jobs_.at(grp.job), p.task);
    if (planned != node)
      log_.Warn("extender_bound_off_plan", {{"pod", pod_ref}, {"node", node}, {"planned", planned}});
    if (!p.bound) log_.Info("extender_pod_bound", {{"pod", pod_ref}, {"node", node}, {"job", grp.job}});
    p.bound = true;
    p.node = node;
    grp.bound = true;
    MarkView(grp.job);
  });
}

void Service::ExtenderPodGone(const std::string& ns, const std::string& name, const std::string& uid) {
  Post([this, ns, name, uid] {
    auto found = FindExtenderPod(ns, name, uid);
    if (!found) return;
    const auto [key, puid] = *found;
    ExtGroup& grp = ext_groups_.at(key);
    grp.pods.erase(puid);
    ext_group_of_pod_.erase(puid);
    MarkView(grp.job);
    log_.Info("extender_pod_gone", {{"pod", (ns.empty() ? "default" : ns) + "/" + name}, {"job", grp.job}});
    if (grp.pods.empty()) EndExtenderGroup(key, JobState::kSucceeded, "all pods of the group are gone");
  });
}

ApiResult Service::ExtenderPreempt(const std::string& body) {
  auto doc = ParseBody(body);
  if (!doc.ok()) return ApiResult::Error(400, doc.status().message());
  auto args = k8s::ParsePreemptionArgs(*doc);
  if (!args.ok()) return ApiResult::Error(400, args.status().message());
  auto shared = std::make_shared<k8s::PreemptionArgs>(std::move(args).value());
  // A pod Berth cannot verify gets no node (an empty answer: no victims).
  if (!CheckPodSizes(shared->pod, options_.extender_limits).ok() || !VerifyPod(shared->pod).ok())
    return {200, k8s::ToJson(k8s::PreemptionResult{})};
  auto r = Call<ApiResult>([this, shared]() -> ApiResult {
    const k8s::Pod& pod = shared->pod;
    StatusOr<MiB> stated = pod.gpu_memory_mib();
    if (!stated.ok()) return {200, k8s::ToJson(k8s::PreemptionResult{})};  // a bad annotation: no node
    const MiB gpu_memory = *stated;
    // A pod whose gang Berth placed can use its planned node only.
    std::string planned;
    if (auto git = ext_groups_.find(GroupKey(pod)); git != ext_groups_.end())
      if (auto p = git->second.pods.find(pod.uid); p != git->second.pods.end())
        planned = ExtenderPlannedNode(jobs_.at(git->second.job), p->second.task);
    // Keep the nodes Berth could use (known, up, not quarantined, big enough
    // for the pod) with their victims.
    k8s::PreemptionResult out;
    const auto& in = shared->has_meta_victims ? shared->node_to_meta_victims : shared->node_to_victims;
    for (const auto& [node, victims] : in) {
      auto n = cluster_->FindNode(node);
      if (!n || !nodes_[n->value()].schedulable()) continue;
      if (!planned.empty() && node != planned) continue;
      const cluster::Node& cn = cluster_->node(*n);
      if (cn.gpu_count < pod.gpus || (cn.cpu_milli > 0 && cn.cpu_milli < pod.cpu_milli) ||
          (cn.memory_mib > 0 && cn.memory_mib < pod.memory_mib))
        continue;
      // GPU memory: evicting victims frees GPUs, never makes one bigger.
      if (pod.gpus > 0 && gpu_memory > 0 &&
          (!cn.gpu_type.valid() || cluster_->gpu_types()[cn.gpu_type.value()].memory_mib < gpu_memory))
        continue;
      out.node_to_meta_victims[node] = victims;
    }
    return {200, k8s::ToJson(out)};
  });
  return r ? *r : ApiResult::Error(503, "berth did not answer in time");
}

}  // namespace berth::server
