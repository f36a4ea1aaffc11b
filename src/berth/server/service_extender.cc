// The Kubernetes extender verbs on the scheduling core. A pod group (or a
// lone pod) becomes one Berth job whose task count is the group's minimum
// member count; the first filter call of a group places the whole gang, and
// each pod of the group is then steered to the node of its task. Extender
// jobs live in memory only (Kubernetes holds the truth about pods).
#include <algorithm>

#include "berth/server/extender.h"
#include "berth/server/records.h"
#include "berth/server/service.h"

namespace berth::server {

using job::JobState;
using nlohmann::json;

namespace {

StatusOr<json> ParseBody(const std::string& body) {
  try {
    return json::parse(body);
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("malformed JSON: ") + e.what());
  }
}

k8s::FilterResult FilterError(std::string message) {
  k8s::FilterResult r;
  r.error = std::move(message);
  return r;
}

std::string GroupKey(const k8s::Pod& pod) {
  const std::string g = pod.group_name();
  return pod.ns + "/" + (g.empty() ? "pod:" + pod.name : g);
}

}  // namespace

void Service::ExpireExtenderReservations() {
  if (ext_groups_.empty()) return;
  const TimeUs now = clock_.Now();
  if (now < next_expiry_check_) return;
  next_expiry_check_ = now + kUsPerSecond;
  std::vector<std::string> expired;
  for (const auto& [key, g] : ext_groups_) {
    auto it = jobs_.find(g.job);
    if (it == jobs_.end()) {
      expired.push_back(key);
      continue;
    }
    const bool all_bound = static_cast<int32_t>(g.bound.size()) >= it->second.spec.num_tasks();
    if (job::IsTerminal(it->second.state) || (!all_bound && now - g.created > options_.extender_reservation_ttl))
      expired.push_back(key);
  }
  for (const auto& key : expired) {
    const int64_t id = ext_groups_[key].job;
    auto it = jobs_.find(id);
    if (it != jobs_.end() && !job::IsTerminal(it->second.state)) {
      (void)sched_->Finish(JobId(id), JobState::kCancelled);
      pending_.erase(id);
      running_.erase(id);
      it->second.state = JobState::kCancelled;
      it->second.finished_at = now;
      it->second.end_reason = "extender reservation expired unbound";
      it->second.placements.clear();
      dirty_ = true;
      log_.Info("extender_reservation_expired", {{"group", key}, {"job", id}});
    }
    ext_group_of_job_.erase(id);
    ext_groups_.erase(key);
  }
}

ApiResult Service::ExtenderFilter(const std::string& body) {
  auto doc = ParseBody(body);
  if (!doc.ok()) return {400, k8s::ToJson(FilterError(doc.status().message()))};
  auto args = k8s::ParseExtenderArgs(*doc);
  if (!args.ok()) return {400, k8s::ToJson(FilterError(args.status().message()))};
  if (!ready_) return {503, k8s::ToJson(FilterError("berth is not ready"))};
  auto shared = std::make_shared<k8s::ExtenderArgs>(std::move(args).value());
  auto r = Call<ApiResult>([this, shared]() -> ApiResult {
    const k8s::ExtenderArgs& a = *shared;
    const k8s::Pod& pod = a.pod;
    const std::vector<std::string> names = a.CandidateNames();
    k8s::FilterResult out;
    auto fail_all = [&](const std::string& why, bool unresolvable) {
      for (const auto& n : names) (unresolvable ? out.failed_and_unresolvable : out.failed_nodes)[n] = why;
    };
    const std::string key = GroupKey(pod);
    auto git = ext_groups_.find(key);
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
      spec.groups.push_back(g);
      Status ok = job::ValidateJob(spec);
      if (ok.ok()) ok = CheckFeasible(cluster_, spec);
      if (!ok.ok()) {
        fail_all("berth: " + ok.message(), true);
        return {200, k8s::ToJson(out)};
      }
      JobEntry e;
      e.id = next_id_++;
      e.key = "k8s:" + key;
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
      grp.created = e.accepted_at;
      pending_.insert(e.id);
      ext_group_of_job_[e.id] = key;
      log_.Info("extender_job", {{"group", key}, {"job", e.id}, {"tasks", g.count}, {"gpus", g.gpus}});
      jobs_.emplace(e.id, std::move(e));
      git = ext_groups_.emplace(key, std::move(grp)).first;
      dirty_ = true;
    }
    ExtGroup& grp = git->second;
    JobEntry& e = jobs_.at(grp.job);
    if (e.state == JobState::kPending) SchedulePass();  // answer now, not on the next tick
    if (e.state != JobState::kRunning) {
      const scheduler::JobRecord* rec = sched_->Find(JobId(e.id));
      const bool never = e.state == JobState::kFailed ||
                         (rec && rec->last_verdict.code == framework::VerdictCode::kUnresolvable);
      std::string why = rec && !rec->last_verdict.reason.empty() ? rec->last_verdict.reason : job::JobStateName(e.state);
      fail_all("berth: gang " + key + " does not fit: " + why, never);
      return {200, k8s::ToJson(out)};
    }
    // The pod's task: the one it had, else the lowest task no pod holds yet.
    int32_t task = -1;
    if (auto t = grp.task_of_pod.find(pod.uid); t != grp.task_of_pod.end()) {
      task = t->second;
    } else {
      std::vector<uint8_t> taken(e.spec.num_tasks(), 0);
      for (const auto& [uid, t2] : grp.task_of_pod) taken[t2] = 1;
      for (int32_t t2 = 0; t2 < e.spec.num_tasks(); ++t2)
        if (!taken[t2]) {
          task = t2;
          break;
        }
      if (task < 0) {
        fail_all("berth: gang " + key + " already has its " + std::to_string(e.spec.num_tasks()) + " pods", false);
        return {200, k8s::ToJson(out)};
      }
      grp.task_of_pod[pod.uid] = task;
    }
    std::string target;
    for (const auto& p : e.placements)
      if (p.task.index == task) target = cluster_.node(p.alloc.node).name;
    std::vector<std::string> pass;
    for (const auto& n : names) {
      if (n == target) {
        pass.push_back(n);
      } else if (!cluster_.FindNode(n)) {
        out.failed_and_unresolvable[n] = "berth: node unknown to berth";
      } else {
        out.failed_nodes[n] = "berth: task " + std::to_string(task) + " of gang " + key + " is placed on " + target;
      }
    }
    if (a.node_names) out.node_names = pass;
    if (a.nodes) {
      json list = *a.nodes;
      json items = json::array();
      if (list.contains("items") && list["items"].is_array())
        for (const auto& item : list["items"])
          if (item.contains("metadata") && item["metadata"].value("name", "") == target) items.push_back(item);
      list["items"] = items;
      out.nodes = list;
    }
    return {200, k8s::ToJson(out)};
  });
  return r ? *r : ApiResult{503, k8s::ToJson(FilterError("berth did not answer in time"))};
}

ApiResult Service::ExtenderPrioritize(const std::string& body) {
  auto doc = ParseBody(body);
  if (!doc.ok()) return ApiResult::Error(400, doc.status().message());
  auto args = k8s::ParseExtenderArgs(*doc);
  if (!args.ok()) return ApiResult::Error(400, args.status().message());
  auto shared = std::make_shared<k8s::ExtenderArgs>(std::move(args).value());
  auto r = Call<ApiResult>([this, shared]() -> ApiResult {
    const k8s::Pod& pod = shared->pod;
    std::string target;
    auto git = ext_groups_.find(GroupKey(pod));
    if (git != ext_groups_.end()) {
      auto t = git->second.task_of_pod.find(pod.uid);
      const JobEntry& e = jobs_.at(git->second.job);
      if (t != git->second.task_of_pod.end() && e.state == JobState::kRunning)
        for (const auto& p : e.placements)
          if (p.task.index == t->second) target = cluster_.node(p.alloc.node).name;
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
  auto r = Call<ApiResult>([this, a]() -> ApiResult {
    const std::string uid = a.pod_uid.empty() ? a.pod_namespace + "/" + a.pod_name : a.pod_uid;
    for (auto& [key, grp] : ext_groups_) {
      auto t = grp.task_of_pod.find(uid);
      if (t == grp.task_of_pod.end()) continue;
      const JobEntry& e = jobs_.at(grp.job);
      std::string planned;
      for (const auto& p : e.placements)
        if (p.task.index == t->second) planned = cluster_.node(p.alloc.node).name;
      if (e.state != JobState::kRunning || planned.empty())
        return {200, k8s::ToJson(k8s::BindingResult{"berth: gang " + key + " holds no placement now"})};
      if (planned != a.node)
        return {200, k8s::ToJson(k8s::BindingResult{"berth: pod " + a.pod_namespace + "/" + a.pod_name +
                                                    " is placed on " + planned + ", not " + a.node})};
      grp.bound.insert(uid);
      log_.Info("extender_bind", {{"pod", a.pod_namespace + "/" + a.pod_name}, {"node", a.node}, {"job", e.id}});
      return {200, k8s::ToJson(k8s::BindingResult{})};
    }
    return {200, k8s::ToJson(k8s::BindingResult{"berth: no placement for pod " + a.pod_namespace + "/" + a.pod_name +
                                                " (its filter call did not go through berth)"})};
  });
  return r ? *r : ApiResult{503, k8s::ToJson(k8s::BindingResult{"berth did not answer in time"})};
}

ApiResult Service::ExtenderPreempt(const std::string& body) {
  auto doc = ParseBody(body);
  if (!doc.ok()) return ApiResult::Error(400, doc.status().message());
  auto args = k8s::ParsePreemptionArgs(*doc);
  if (!args.ok()) return ApiResult::Error(400, args.status().message());
  auto shared = std::make_shared<k8s::PreemptionArgs>(std::move(args).value());
  auto r = Call<ApiResult>([this, shared]() -> ApiResult {
    // Keep the nodes Berth could use (known, up, not quarantined) with their victims.
    k8s::PreemptionResult out;
    const auto& in = shared->has_meta_victims ? shared->node_to_meta_victims : shared->node_to_victims;
    for (const auto& [node, victims] : in) {
      auto n = cluster_.FindNode(node);
      if (!n || !nodes_[n->value()].up || nodes_[n->value()].quarantined) continue;
      out.node_to_meta_victims[node] = victims;
    }
    return {200, k8s::ToJson(out)};
  });
  return r ? *r : ApiResult::Error(503, "berth did not answer in time");
}

}  // namespace berth::server
