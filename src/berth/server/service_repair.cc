// In-place gang repair with node agents or virtual nodes (docs/failures.md,
// "In-place repair in the service"; ServiceOptions::repair): a failure that stops some tasks
// of a running gang restarts only those, each as a new attempt of the same
// run with its rank kept, on a replacement found like the fault handler's
// (faults/handler.h): the same node when only its process was lost or one of
// its GPUs failed, then a hot spare of its domain, then the best-fitting free
// node of its leaf, spine, ... up to the narrowest domain that holds the
// gang. Hot spares (ServiceOptions::spares) are kept out of the scheduler.
// The failure history of failure-aware plugins (topology-reliable) is fed
// from the service's own failure reports here too.
#include <algorithm>
#include <bit>
#include <climits>

#include "berth/faults/repair_target.h"
#include "berth/faults/spares.h"
#include "berth/plugins/topology/failure_history.h"
#include "berth/server/records.h"
#include "berth/server/service.h"

namespace berth::server {

using job::JobState;
using nlohmann::json;

void Service::FailJob(JobEntry& e, const std::vector<int32_t>& tasks, NodeId node, uint64_t failed_gpus,
                      const std::string& reason) {
  if (TryRepair(e, tasks, node, failed_gpus, reason)) return;
  const TimeUs cost = e.spec.restart_cost >= 0 ? e.spec.restart_cost : options_.restore_cost;
  if (Status s = sched_->Interrupt(JobId(e.id), cost, false); !s.ok()) {
    log_.Error("requeue_failed", {{"job", e.id}, {"error", s.message()}});
    return;
  }
  Requeued(e, reason);
}

std::optional<state::Allocation> Service::RepairTarget(const JobEntry& e, const framework::TaskPlacement& p,
                                                       NodeId node, uint64_t failed_gpus) {
  const state::ClusterState& st = sched_->state();
  const bool home_alive = nodes_[node.value()].up && nodes_[node.value()].schedulable() && st.up(node);
  // A lost process restarts where it was; a failed GPU's task moves to the
  // node's other GPUs.
  if (failed_gpus == 0 && home_alive) return p.alloc;
  if (failed_gpus != ~uint64_t{0} && home_alive)
    if (auto a = faults::FitTaskOn(*cluster_, st, p.alloc, node, p.alloc.gpu_mask | failed_gpus)) return a;
  // A spare of its domain first, then the best-fitting free node (faults/repair_target.h).
  faults::RepairNodes candidates;
  candidates.spare = [this](NodeId n) {
    const NodeEntry& ne = nodes_[n.value()];
    return ne.spare && ne.up && !ne.quarantined && !ne.draining;
  };
  candidates.usable = [this](NodeId n) { return nodes_[n.value()].schedulable(); };
  for (;;) {
    std::optional<faults::RepairPick> pick = faults::FindRepairTarget(*cluster_, st, e.placements, p, node, candidates);
    if (!pick) return std::nullopt;
    if (!pick->spare) return pick->alloc;
    const NodeId k = pick->alloc.node;
    nodes_[k.value()].spare = false;  // no longer a spare either way
    node_views_dirty_ = true;
    if (!sched_->SetNodeUp(k, true).ok()) continue;
    ++metrics_.spares_used;
    log_.Info("spare_taken", {{"node", cluster_->node(k).name}, {"job", e.id}, {"task", p.task.index}});
    return pick->alloc;
  }
}

bool Service::TryRepair(JobEntry& e, const std::vector<int32_t>& tasks, NodeId node, uint64_t failed_gpus,
                        const std::string& reason) {
  if (options_.repair != faults::RepairMode::kInPlace || (!options_.agent_nodes && !vnodes_)) return false;
  if (e.state != JobState::kRunning || e.extender || e.replica || !e.launched || e.placements.size() < 2) return false;
  std::vector<int32_t> hit(tasks);
  std::sort(hit.begin(), hit.end());
  hit.erase(std::unique(hit.begin(), hit.end()), hit.end());
  const JobId id(e.id);
  std::vector<int32_t> restarted;
  json moved = json::array();
  bool first = true;
  for (int32_t t : hit) {
    if (auto x = e.task_exits.find(t); x != e.task_exits.end() && x->second >= 0) continue;  // done already
    const scheduler::JobRecord* rec = sched_->Find(id);
    if (!rec) return false;
    auto p = std::find_if(rec->placements.begin(), rec->placements.end(),
                          [&](const framework::TaskPlacement& q) { return q.task.index == t; });
    if (p == rec->placements.end()) return false;
    const framework::TaskPlacement was = *p;
    auto a = RepairTarget(e, was, node, failed_gpus);
    Status s = a ? sched_->RepairTask(id, t, *a, first ? options_.repair_cost : 0, false)
                 : NotFound("no spare or free node of its domain holds it");
    if (!s.ok()) {
      ++metrics_.repair_fallbacks;
      log_.Warn("repair_fallback", {{"job", e.id}, {"task", t}, {"reason", s.message()}});
      return false;  // the caller requeues the whole gang (which undoes a partial repair)
    }
    first = false;
    restarted.push_back(t);
    json gpus = json::array();
    for (uint64_t m = a->gpu_mask; m; m &= m - 1) gpus.push_back(std::countr_zero(m));
    moved.push_back({{"task", t}, {"from", cluster_->node(was.alloc.node).name}, {"to", cluster_->node(a->node).name},
                     {"gpus", gpus}});
  }
  if (restarted.empty()) return false;
  const scheduler::JobRecord* rec = sched_->Find(id);
  e.placements = rec->placements;
  if (options_.repair_peers == ServiceOptions::RepairPeers::kRestart)
    for (const auto& p : e.placements)
      if (!std::count(restarted.begin(), restarted.end(), p.task.index) && !e.task_exits.count(p.task.index))
        restarted.push_back(p.task.index);
  std::sort(restarted.begin(), restarted.end());
  for (int32_t t : restarted) {
    const int32_t attempt = ++e.task_attempts[t];
    e.attempts_unlaunched.insert(t);
    e.task_exits.erase(t);
    for (auto& m : moved)
      if (m["task"] == t) m["attempt"] = attempt;
    auto p = std::find_if(e.placements.begin(), e.placements.end(),
                          [&](const framework::TaskPlacement& q) { return q.task.index == t; });
    const int64_t job = e.id;
    const int32_t gen = e.generation;
    AppendRecord({store::RecordKind::kTaskRepaired, job, clock_.Now(), "", EncodeRepair(*cluster_, gen, attempt, *p)},
                 [this, job, gen, t, attempt](const Status& s) {
                   Post([this, job, gen, t, attempt, s] { OnRepairDurable(job, gen, t, attempt, s); });
                 });
  }
  // Virtual nodes run the gang on its new nodes, the repair cost later.
  if (vnodes_) {
    const auto delay = static_cast<TimeUs>(static_cast<double>(options_.repair_cost) / options_.speedup);
    if (!vnodes_->Move(e.id, e.generation, RunNodes(e.placements), delay)) LaunchOnAgents(e);
  }
  ++e.repairs;
  ++metrics_.gang_repairs;
  metrics_.tasks_repaired += restarted.size();
  MarkView(e);
  dirty_ = true;
  log_.Warn("gang_repaired", {{"job", e.id}, {"generation", e.generation}, {"reason", reason}, {"moved", moved},
                              {"tasks_restarted", restarted},
                              {"peers", options_.repair_peers == ServiceOptions::RepairPeers::kKeep ? "keep" : "restart"}});
  return true;
}

void Service::OnRepairDurable(int64_t id, int32_t generation, int32_t task, int32_t attempt, const Status& s) {
  if (!s.ok()) return;  // fenced or failing: this process stops deciding
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  JobEntry& e = it->second;
  if (e.state != JobState::kRunning || e.generation != generation || e.attempt(task) != attempt) return;
  e.attempts_unlaunched.erase(task);  // its agent learns it at its next heartbeat
}

void Service::RefreshSpares() {
  if (options_.spares.mode == faults::SpareMode::kNone || !recovered_ || !sched_ || cluster_->num_nodes() == 0) return;
  const state::ClusterState& st = sched_->state();
  for (NodeEntry& ne : nodes_) {
    if (ne.spare && (!ne.up || ne.quarantined || ne.draining || ne.failed_gpus)) {
      ne.spare = false;  // a spare that failed is no spare; it may become one again once healthy
      node_views_dirty_ = true;
    }
  }
  const faults::SpareChanges changes = faults::SpareChangesFor(
      *cluster_, options_.spares, [this](NodeId n) { return nodes_[n.value()].spare; },
      [&](NodeId n) {
        const NodeEntry& ne = nodes_[n.value()];
        return ne.schedulable() && !ne.failed_gpus && st.tasks_on(n).empty();
      },
      [this](DomainId d, int32_t m) { return SpareWant(d, m); });
  // Fewer wanted (a sized target fell): those spares go back to work.
  for (NodeId k : changes.release) {
    NodeEntry& ne = nodes_[k.value()];
    ne.spare = false;
    (void)sched_->SetNodeUp(k, ne.schedulable());
    node_views_dirty_ = true;
    dirty_ = true;
    log_.Info("spare_released", {{"node", cluster_->node(k).name}});
  }
  for (NodeId k : changes.add) {
    if (!sched_->SetNodeUp(k, false).ok()) continue;
    nodes_[k.value()].spare = true;
    node_views_dirty_ = true;
    dirty_ = true;
    log_.Info("spare_set", {{"node", cluster_->node(k).name},
                            {"domain", cluster_->domain(cluster_->node(k).domain[static_cast<int>(
                                           *faults::SpareLevel(options_.spares))]).name}});
  }
}

int32_t Service::SpareWant(DomainId d, int32_t nodes) {
  if (options_.spares.per_domain >= 0) return std::max(1, options_.spares.per_domain);
  if (options_.spare_rates.empty()) return 1;
  const TimeUs now = clock_.Now();
  // Once a minute, or a second after the jobs held changed.
  const size_t held = pending_.size() + running_.size();
  const bool changed = held != spare_sized_jobs_ && now - spare_sized_at_ >= kUsPerSecond;
  if (spare_sized_at_ < 0 || changed || now - spare_sized_at_ >= 60 * kUsPerSecond) {
    // The largest gang pending or running (ties: the lowest id), and its
    // restart cost: what a domain without a spare loses at a fault.
    spare_sized_at_ = now;
    spare_sized_jobs_ = held;
    spare_rate_ = faults::NodeLevelRate(options_.spare_rates, std::max(1, cluster_->max_gpus_per_node()));
    spare_gang_gpus_ = 0;
    spare_gang_restart_ = options_.restart_cost;
    int64_t best = -1;
    for (const auto* set : {&pending_, &running_})
      for (int64_t id : *set) {
        const auto it = jobs_.find(id);
        if (it == jobs_.end() || it->second.spec.num_tasks() < 2) continue;
        const int64_t gpus = it->second.spec.total_gpus();
        if (gpus < spare_gang_gpus_ || (gpus == spare_gang_gpus_ && best >= 0 && id > best)) continue;
        best = id;
        spare_gang_gpus_ = gpus;
        const TimeUs cost = it->second.spec.restart_cost;
        spare_gang_restart_ = cost >= 0 ? cost : options_.restart_cost;
      }
  }
  return faults::DomainSpareCount(nodes, cluster_->domain(d).gpus, spare_rate_,
                                  std::min<int64_t>(spare_gang_gpus_, cluster_->total_gpus()), spare_gang_restart_,
                                  options_.repair_cost);
}

void Service::RecordFailure(NodeId node, double weight) {
  const TimeUs now = clock_.Now();
  const std::string& name = cluster_->node(node).name;
  failure_history_.emplace_back(name, now, weight);
  if (failure_history_.size() > kMaxFailureHistory) failure_history_.pop_front();
  // Durable, so that a restarted (or newly elected) server places by the same
  // history: folded back by Recover.
  AppendRecord({store::RecordKind::kNodeFailed, -1, now, name, EncodeNodeFailure(weight)});
  metrics_.failure_history.store(static_cast<int64_t>(failure_history_.size()));
  if (!sched_) return;
  bool learned = false;
  for (framework::PlanPlugin* p : sched_->framework().plan())
    if (auto* l = dynamic_cast<plugins::FailureAware*>(p)) {
      l->failure_history().Record(node, now, weight);
      learned = true;
    }
  if (learned) ++metrics_.failures_learned;
}

void Service::ReplayFailureHistory(scheduler::Scheduler& s, const cluster::Cluster& c) const {
  std::vector<plugins::FailureAware*> learners;
  for (framework::PlanPlugin* p : s.framework().plan())
    if (auto* l = dynamic_cast<plugins::FailureAware*>(p)) learners.push_back(l);
  if (learners.empty()) return;
  for (const auto& [name, at, weight] : failure_history_)
    if (auto n = c.FindNode(name))
      for (auto* l : learners) l->failure_history().Record(*n, at, weight);
}

}  // namespace berth::server
