// KubeScheduler: gangs on a lost node (NotReady, or a NoExecute taint such
// as a GPU-health one), repaired in place or requeued, and the hot spares
// kept for the repairs (see kube_repair.h and kube_scheduler.h).
//
// A repair, for a running gang of two or more pods whose mode is in-place:
// each task on the lost node asks the core for a target (a spare or free
// node of its domain, faults::FindRepairTarget) and moves there through
// Scheduler::RepairTask, so the state's accounting and indexes follow. When
// every task has one, only their pods are evicted: the job keeps running and
// its other pods are untouched. Each moved task then awaits its replacement:
// a pending pod of the gang's group of the same shape (one with the evicted
// pod's name first, as a StatefulSet makes; else the lowest name) takes the
// freed rank and is bound to the target. A task with no target, or a
// replacement that does not come within replacement_timeout, requeues the
// gang as before: every pod of it is evicted and its owners make new ones.
#include "berth/kubesched/kube_repair.h"

#include <algorithm>
#include <bit>

#include "berth/faults/repair_target.h"
#include "berth/kubesched/kube_scheduler.h"
#include "berth/kubesched/kube_util.h"
#include "berth/workload/launch.h"

namespace berth::kube {

using job::JobState;
using nlohmann::json;

StatusOr<std::optional<faults::RepairMode>> ParseRepairAnnotation(const std::string& where, const std::string& value) {
  if (value.empty()) return std::optional<faults::RepairMode>();
  if (auto m = faults::ParseRepairMode(value)) return std::optional<faults::RepairMode>(*m);
  return InvalidArgument(where + ": expected in-place or requeue, found '" + value.substr(0, 64) + "'");
}

void KubeScheduler::NodeLost(NodeId node, const std::string& reason) {
  const std::string& name = cluster_->node(node).name;
  for (auto& [id, job] : jobs_) {
    if (!job.running) continue;
    const auto* rec = sched_->Find(JobId(id));
    if (!rec) continue;
    bool hit = false;
    for (const auto& p : rec->placements) hit = hit || p.alloc.node == node;
    if (!hit) continue;
    ++metrics_.node_failures;
    if (TryRepair(job, node, reason)) continue;
    // Requeued: all its pods are evicted so no partial gang holds GPUs (owners re-create them).
    log_.Warn("kube_gang_lost_node", {{"group", job.group}, {"job", id}, {"node", name}, {"reason", reason},
                                      {"repair", faults::RepairModeName(RepairModeOf(job))}});
    for (const auto& uid : job.pod_of_task) {
      auto p = pods_.find(uid);
      if (p != pods_.end()) Enqueue(WriteOp::Make(WriteOp::Kind::kEvict, p->second.ns, p->second.name, uid));
    }
  }
}

bool KubeScheduler::TryRepair(JobEntry& job, NodeId node, const std::string& reason) {
  if (RepairModeOf(job) != faults::RepairMode::kInPlace) return false;
  const JobId id(job.id);
  const scheduler::JobRecord* rec = sched_->Find(id);
  // A lone pod or a service replica is simply made again by its owner.
  if (!rec || rec->placements.size() < 2 || job.group.rfind("uid:", 0) == 0 || !job.service.empty()) return false;
  std::vector<int32_t> tasks;
  for (const auto& p : rec->placements)
    if (p.alloc.node == node) tasks.push_back(p.task.index);
  std::sort(tasks.begin(), tasks.end());
  // Ranks stay where they were (an adopted gang's from its placement now).
  if (job.rank_order.empty()) job.rank_order = workload::RankOrder(rec->placements);
  const std::string& lost = cluster_->node(node).name;
  faults::RepairNodes candidates;
  candidates.spare = [this](NodeId n) {
    const auto it = nodes_.find(cluster_->node(n).name);
    return spares_.count(cluster_->node(n).name) && it != nodes_.end() && it->second.usable();
  };
  candidates.usable = [this](NodeId n) {
    const auto it = nodes_.find(cluster_->node(n).name);
    return it != nodes_.end() && it->second.usable() && !spares_.count(it->first);
  };
  json moved = json::array();
  std::vector<std::pair<int32_t, std::string>> targets;  // task -> target node
  bool first = true;
  for (int32_t t : tasks) {
    rec = sched_->Find(id);
    auto p = std::find_if(rec->placements.begin(), rec->placements.end(),
                          [&](const framework::TaskPlacement& q) { return q.task.index == t; });
    if (p == rec->placements.end()) return false;
    const framework::TaskPlacement was = *p;
    std::optional<faults::RepairPick> pick =
        faults::FindRepairTarget(*cluster_, sched_->state(), rec->placements, was, node, candidates);
    Status s = pick ? Status::Ok() : NotFound("no spare or free node of its domain holds it");
    if (pick && pick->spare) {
      const std::string& spare = cluster_->node(pick->alloc.node).name;
      spares_.erase(spare);
      s = sched_->SetNodeUp(pick->alloc.node, true);
      if (s.ok()) {
        ++metrics_.spares_used;
        log_.Info("kube_spare_taken", {{"node", spare}, {"group", job.group}, {"job", job.id}, {"task", t}});
      }
    }
    if (s.ok()) s = sched_->RepairTask(id, t, pick->alloc, first ? options_.repair_cost : 0, false);
    if (!s.ok()) {
      // The gang is requeued: its pods' evictions release every task, moved or not.
      ++metrics_.repair_fallbacks;
      log_.Warn("kube_repair_fallback", {{"group", job.group}, {"job", job.id}, {"node", lost}, {"task", t},
                                         {"reason", s.message()}});
      return false;
    }
    first = false;
    const std::string& to = cluster_->node(pick->alloc.node).name;
    targets.emplace_back(t, to);
    json gpus = json::array();
    for (uint64_t m = pick->alloc.gpu_mask; m; m &= m - 1) gpus.push_back(std::countr_zero(m));
    moved.push_back({{"task", t}, {"from", lost}, {"to", to}, {"gpus", gpus}, {"spare", pick->spare}});
  }
  if (targets.empty()) return false;
  const TimeUs deadline = clock_.Now() + options_.replacement_timeout;
  json evicted = json::array();
  for (const auto& [t, to] : targets) {
    JobEntry::Awaited& a = job.awaiting[t];
    a.from = lost;
    a.to = to;
    a.deadline = deadline;
    std::string& uid = job.pod_of_task[t];
    if (auto pit = pods_.find(uid); pit != pods_.end()) {
      PodEntry& pod = pit->second;
      a.pod = pod.name;
      evicted.push_back(pod.ns + "/" + pod.name);
      Enqueue(WriteOp::Make(WriteOp::Kind::kEvict, pod.ns, pod.name, uid));
      ++evictions_;
      // The task is no longer this pod's: its leaving releases nothing.
      pod.job = -1;
      pod.task = -1;
      pod.terminating = true;
    }
    uid.clear();
  }
  awaiting_jobs_.insert(job.id);
  ++metrics_.gang_repairs;
  metrics_.tasks_repaired += targets.size();
  dirty_ = true;
  log_.Warn("kube_gang_repaired", {{"group", job.group}, {"job", job.id}, {"node", lost}, {"reason", reason},
                                   {"moved", moved}, {"evicted", evicted}});
  const int64_t left = std::count_if(job.pod_of_task.begin(), job.pod_of_task.end(),
                                     [](const std::string& u) { return !u.empty(); });
  GroupStatus(job.group, "Running", left,
              "berth: repaired in place after " + reason + ": waiting for " + std::to_string(targets.size()) +
                  " replacement pod(s)");
  return true;
}

void KubeScheduler::AttachReplacements() {
  // Pending pods of Berth's that no job holds, by group, in name order.
  std::map<std::string, std::vector<PodEntry*>> pending;
  for (auto& [uid, p] : pods_) {
    if (p.scheduler != options_.scheduler_name || !p.node.empty() || p.binding || p.terminating || p.job >= 0 ||
        p.group.empty())
      continue;
    pending[p.group].push_back(&p);
  }
  if (pending.empty()) return;
  for (auto& [key, members] : pending)
    std::sort(members.begin(), members.end(),
              [](const PodEntry* a, const PodEntry* b) { return NaturalLess(a->name, b->name); });
  for (int64_t id : std::vector<int64_t>(awaiting_jobs_.begin(), awaiting_jobs_.end())) {
    auto jit = jobs_.find(id);
    if (jit == jobs_.end()) continue;
    JobEntry& job = jit->second;
    auto g = pending.find(job.group);
    if (g == pending.end()) continue;
    const scheduler::JobRecord* rec = sched_->Find(JobId(id));
    if (!rec) continue;
    for (auto it = job.awaiting.begin(); it != job.awaiting.end();) {
      const int32_t t = it->first;
      auto p = std::find_if(rec->placements.begin(), rec->placements.end(),
                            [&](const framework::TaskPlacement& q) { return q.task.index == t; });
      if (p == rec->placements.end()) {
        it = job.awaiting.erase(it);
        continue;
      }
      auto fits = [&](const PodEntry* pod) {
        return pod->job < 0 && pod->gpus == p->alloc.gpu_count() && pod->cpu_milli == p->alloc.cpu_milli &&
               pod->memory_mib == p->alloc.memory_mib;
      };
      auto& cands = g->second;
      auto c = std::find_if(cands.begin(), cands.end(), [&](const PodEntry* pod) {
        return pod->name == it->second.pod && fits(pod);
      });
      if (c == cands.end()) c = std::find_if(cands.begin(), cands.end(), fits);
      if (c == cands.end()) {
        ++it;
        continue;
      }
      PodEntry& pod = **c;
      pod.job = id;
      pod.task = t;
      job.pod_of_task[t] = pod.uid;
      log_.Info("kube_repair_replacement", {{"group", job.group}, {"job", id}, {"task", t},
                                            {"pod", pod.ns + "/" + pod.name}, {"node", it->second.to},
                                            {"replaces", it->second.pod}});
      SendBinds(job, t);
      it = job.awaiting.erase(it);
    }
    if (job.awaiting.empty()) {
      awaiting_jobs_.erase(id);
      GroupStatus(job.group, "Running", static_cast<int64_t>(job.pod_of_task.size()),
                  "berth: " + std::to_string(job.pod_of_task.size()) + " pods placed");
    }
  }
}

void KubeScheduler::ExpireRepairs(TimeUs now) {
  for (int64_t id : std::vector<int64_t>(awaiting_jobs_.begin(), awaiting_jobs_.end())) {
    auto jit = jobs_.find(id);
    if (jit == jobs_.end()) {
      awaiting_jobs_.erase(id);
      continue;
    }
    JobEntry& job = jit->second;
    const auto late = std::find_if(job.awaiting.begin(), job.awaiting.end(),
                                   [&](const auto& a) { return a.second.deadline <= now; });
    if (late == job.awaiting.end()) continue;
    ++repair_timeouts_;
    ++metrics_.repair_fallbacks;
    log_.Warn("kube_repair_fallback", {{"group", job.group}, {"job", id}, {"node", late->second.from},
                                       {"task", late->first}, {"target", late->second.to},
                                       {"reason", "no replacement pod within the replacement timeout"}});
    // The targets are freed now; the other pods' evictions release the rest.
    DropAwaited(job);
    bool any_left = false;
    for (const auto& uid : job.pod_of_task) {
      auto p = pods_.find(uid);
      if (p == pods_.end()) continue;
      any_left = true;
      Enqueue(WriteOp::Make(WriteOp::Kind::kEvict, p->second.ns, p->second.name, uid));
    }
    if (!any_left) {
      ForgetLaunchConfig(job);
      jobs_.erase(jit);
    }
    dirty_ = true;
  }
}

void KubeScheduler::DropAwaited(JobEntry& job) {
  for (const auto& [t, a] : job.awaiting) {
    Status s = sched_ ? sched_->ReleaseTask(JobId(job.id), t, JobState::kCancelled) : Status::Ok();
    if (!s.ok() && s.code() != StatusCode::kNotFound)
      log_.Warn("kube_release_failed", {{"group", job.group}, {"task", t}, {"error", s.message()}});
  }
  job.awaiting.clear();
  awaiting_jobs_.erase(job.id);
}

void KubeScheduler::RefreshSpares() {
  if (options_.spares.mode == faults::SpareMode::kNone || !sched_ || !cluster_) return;
  // A spare that went unusable (not ready, cordoned, tainted) is no spare.
  for (auto it = spares_.begin(); it != spares_.end();) {
    const auto n = nodes_.find(*it);
    if (n == nodes_.end() || !n->second.usable() || !cluster_->FindNode(*it)) {
      log_.Info("kube_spare_dropped", {{"node", *it}});
      it = spares_.erase(it);
    } else {
      ++it;
    }
  }
  const state::ClusterState& st = sched_->state();
  const std::vector<NodeId> add = faults::SparesToAdd(
      *cluster_, options_.spares, [this](NodeId n) { return spares_.count(cluster_->node(n).name) > 0; },
      [&](NodeId n) {
        const auto it = nodes_.find(cluster_->node(n).name);
        return it != nodes_.end() && it->second.usable() && st.up(n) && st.tasks_on(n).empty();
      });
  const cluster::Level level = *faults::SpareLevel(options_.spares);
  for (NodeId n : add) {
    if (!sched_->SetNodeUp(n, false).ok()) continue;
    const cluster::Node& node = cluster_->node(n);
    spares_.insert(node.name);
    log_.Info("kube_spare_set", {{"node", node.name},
                                 {"domain", cluster_->domain(node.domain[static_cast<int>(level)]).name}});
  }
}

void KubeScheduler::ReapplySpares() {
  for (auto it = spares_.begin(); it != spares_.end();) {
    const auto n = cluster_->FindNode(*it);
    if (n && sched_->SetNodeUp(*n, false).ok()) {
      ++it;
    } else {
      it = spares_.erase(it);
    }
  }
}

std::string KubeScheduler::RepairMetricsText() const {
  std::string out;
  auto counter = [&](const char* name, const char* help, uint64_t v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name + " " +
           std::to_string(v) + "\n";
  };
  counter("berth_gang_repairs_total", "Gangs repaired in place after a lost node (--repair in-place).",
          metrics_.gang_repairs.load());
  counter("berth_tasks_repaired_total", "Tasks moved to a replacement node by those repairs.",
          metrics_.tasks_repaired.load());
  counter("berth_repair_fallbacks_total",
          "In-place repairs that found no replacement, or whose replacement pod did not come; the gang was requeued.",
          metrics_.repair_fallbacks.load());
  counter("berth_spares_used_total", "Hot spare nodes taken by in-place repairs.", metrics_.spares_used.load());
  counter("berth_kube_repair_timeouts_total",
          "Repaired tasks whose replacement pod did not come within the replacement timeout.",
          static_cast<uint64_t>(repair_timeouts_));
  int64_t awaited = 0;
  for (int64_t id : awaiting_jobs_)
    if (auto j = jobs_.find(id); j != jobs_.end()) awaited += static_cast<int64_t>(j->second.awaiting.size());
  out += "# HELP berth_kube_replacements_awaited Repaired tasks waiting for their replacement pod.\n"
         "# TYPE berth_kube_replacements_awaited gauge\nberth_kube_replacements_awaited " +
         std::to_string(awaited) + "\n";
  out += "# HELP berth_kube_spares Hot spare nodes kept idle for in-place repairs.\n"
         "# TYPE berth_kube_spares gauge\nberth_kube_spares " + std::to_string(spares_.size()) + "\n";
  return out;
}

}  // namespace berth::kube
