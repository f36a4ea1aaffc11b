// The read snapshot, built on the scheduling thread: which jobs changed, their
// views, the node and queue tables, and publishing at the end of a loop turn
// (read_view.h). The reads that use it are in service_reads.cc.
#include <algorithm>
#include <chrono>

#include "berth/server/queue_views.h"
#include "berth/server/service.h"

namespace berth::server {

using job::JobState;
using nlohmann::json;

namespace {
// At most this many pending jobs whose verdicts a pass may have changed get a
// new view per turn (a pass can reach every pending job; their "why" then
// follows within a few turns, and the turn stays short).
constexpr size_t kVerdictRefreshPerTurn = 4096;
}  // namespace

// The leaf queue the job is charged to: the scheduler's record of it, else
// where the queue tree would put it; a job the tree places nowhere (only
// while an auto-leaf tree has not made its leaf yet) is shown under the leaf
// it will get: its queue, else its tenant, else "default".
std::string Service::QueueOf(const JobEntry& e) const {
  if (!sched_) return !e.spec.queue.empty() ? e.spec.queue : !e.spec.tenant.empty() ? e.spec.tenant : "default";
  const tenancy::QueueTree& tree = sched_->ledger().tree();
  const scheduler::JobRecord* rec = sched_->Find(JobId(e.id));
  const int32_t q = rec ? rec->queue : tree.LeafFor(e.spec);
  if (q >= 0 && q < tree.size()) return tree.node(q).name;
  if (!e.spec.queue.empty()) return e.spec.queue;
  if (!e.spec.tenant.empty()) return e.spec.tenant;
  return "default";
}

// One line on why the job is where it is: the last verdict's reason while
// pending, the end reason once finished, "" while running.
std::string Service::WhyLine(const JobEntry& e) const {
  if (e.state == JobState::kRunning) return "";
  if (e.state != JobState::kPending) return e.end_reason;
  if (!e.unfit.empty()) return e.unfit;
  const scheduler::JobRecord* rec = sched_ ? sched_->Find(JobId(e.id)) : nullptr;
  if (!rec || (rec->last_verdict.ok() && rec->last_verdict.plugin.empty()))
    return e.durable ? "queued; not yet tried by the scheduler" : "being stored";
  return rec->last_verdict.reason;
}

void Service::MarkView(JobEntry& e) {
  // A workflow's stage job changed: its workflow moves on (when it ended) and
  // its view is rebuilt this turn (ProcessWorkflowEvents; repeats are harmless).
  if (stage_of_job_.count(e.id)) stage_jobs_changed_.push_back(e.id);
  if (e.view_dirty) return;
  e.view_dirty = true;
  view_queue_.push_back(e.id);
}

void Service::MarkView(int64_t id) {
  auto it = jobs_.find(id);
  if (it != jobs_.end()) return MarkView(it->second);
  view_queue_.push_back(id);  // gone: its view is removed
}

json Service::ExtenderJson(int64_t id) const {
  auto k = ext_group_of_job_.find(id);
  if (k == ext_group_of_job_.end()) return nullptr;
  auto g = ext_groups_.find(k->second);
  if (g == ext_groups_.end()) return nullptr;
  json pods = json::array();
  for (const auto& [uid, p] : g->second.pods)
    pods.push_back({{"name", p.name}, {"uid", uid}, {"task", p.task}, {"bound", p.bound}, {"node", p.node}});
  return {{"group", k->second}, {"bound", g->second.bound}, {"pods", pods}};
}

std::shared_ptr<const JobView> Service::BuildJobView(JobEntry& e) const {
  auto v = std::make_shared<JobView>();
  v->id = e.id;
  v->key = e.key;
  if (!e.shared_spec) e.shared_spec = std::make_shared<const job::JobSpec>(e.spec);
  v->spec = e.shared_spec;
  v->state = e.state;
  v->durable = e.durable;
  v->queued = pending_.count(e.id) || running_.count(e.id);
  v->accepted_at = e.accepted_at;
  v->started_at = e.started_at;
  v->finished_at = e.finished_at;
  v->generation = e.generation;
  v->requeues = e.requeues;
  v->repairs = e.repairs;
  if (!e.task_attempts.empty()) {
    v->task_attempts = e.task_attempts;
    v->rank_order = e.rank_order;
  }
  v->placements =
      e.placements.empty() ? no_placements_ : std::make_shared<const std::vector<framework::TaskPlacement>>(e.placements);
  v->end_reason = e.end_reason;
  v->unfit = e.unfit;
  v->queue = QueueOf(e);
  const scheduler::JobRecord* rec = sched_ ? sched_->Find(JobId(e.id)) : nullptr;
  v->queue_index = rec ? rec->queue : sched_ ? sched_->ledger().tree().LeafFor(e.spec) : -1;
  v->why = WhyLine(e);
  if (rec) {
    v->has_record = true;
    v->tried = !(rec->last_verdict.ok() && rec->last_verdict.plugin.empty());
    if (v->tried) v->verdict = rec->last_verdict;
    v->attempts = rec->attempts;
    v->preemptions = rec->preemptions;
    v->startup_delay = rec->startup_delay;
    v->run_class = rec->run_class;
  }
  if (e.extender) v->extender = ExtenderJson(e.id);
  return v;
}

void Service::PublishViews() {
  auto publish = [this] {
    auto snap = std::make_shared<ReadSnapshot>();
    snap->cluster = cluster_;
    snap->chunks.assign(chunks_.begin(), chunks_.end());
    snap->nodes = node_views_;
    snap->queues = queue_views_;
    if (!tallies_view_) tallies_view_ = std::make_shared<const QueueTallies>(tallies_);
    snap->tallies = tallies_view_;
    snap->turn = turn_;
    std::fill(chunk_fresh_.begin(), chunk_fresh_.end(), 0);
    views_.Publish(std::move(snap));
  };
  ++turn_;
  bool changed = false;
  auto put = [&](int64_t id, std::shared_ptr<const JobView> view) {
    const size_t c = static_cast<size_t>(id / kJobsPerChunk);
    if (c >= chunks_.size()) {
      chunks_.resize(c + 1);
      chunk_fresh_.resize(c + 1, 0);
    }
    if (!chunk_fresh_[c]) {  // copy on the first change since the last publish
      chunks_[c] = chunks_[c] ? std::make_shared<JobChunk>(*chunks_[c]) : std::make_shared<JobChunk>();
      chunk_fresh_[c] = 1;
    }
    JobChunk& chunk = *chunks_[c];
    auto& slot = chunk.jobs[id % kJobsPerChunk];
    auto pending = [](const std::shared_ptr<const JobView>& v) {
      return v && v->durable && v->state == JobState::kPending;
    };
    chunk.pending += static_cast<int32_t>(pending(view)) - static_cast<int32_t>(pending(slot));
    if (slot) TallyJob(tallies_, *slot, -1);
    if (view) TallyJob(tallies_, *view, +1);
    if ((slot && slot->queued) || (view && view->queued)) tallies_view_.reset();
    slot = std::move(view);
    changed = true;
  };
  for (int64_t id : view_queue_) {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) {
      if (id >= 0 && static_cast<size_t>(id / kJobsPerChunk) < chunks_.size()) put(id, nullptr);
      continue;
    }
    if (!it->second.view_dirty) continue;  // already rebuilt
    it->second.view_dirty = false;
    it->second.verdict_stale = false;
    put(id, BuildJobView(it->second));
  }
  view_queue_.clear();
  // Pending jobs a pass reached: a new view when their verdict changed.
  size_t done = 0;
  for (; done < verdict_queue_.size() && done < kVerdictRefreshPerTurn; ++done) {
    const int64_t id = verdict_queue_[done];
    auto it = jobs_.find(id);
    if (it == jobs_.end() || !it->second.verdict_stale) continue;
    JobEntry& e = it->second;
    e.verdict_stale = false;
    const scheduler::JobRecord* rec = sched_ ? sched_->Find(JobId(id)) : nullptr;
    const size_t c = static_cast<size_t>(id / kJobsPerChunk);
    const JobView* old = c < chunks_.size() && chunks_[c] ? chunks_[c]->jobs[id % kJobsPerChunk].get() : nullptr;
    if (old && rec && old->state == e.state && old->attempts == rec->attempts &&
        old->verdict.code == rec->last_verdict.code && old->verdict.plugin == rec->last_verdict.plugin &&
        old->verdict.reason == rec->last_verdict.reason && old->verdict.rejects.size() == rec->last_verdict.rejects.size())
      continue;
    put(id, BuildJobView(e));
  }
  verdict_queue_.erase(verdict_queue_.begin(), verdict_queue_.begin() + static_cast<std::ptrdiff_t>(done));
  if (!sched_) {  // agents mode before any node registered: no nodes, no queue figures
    if (!node_views_ || node_views_dirty_) {
      node_views_ = std::make_shared<const std::vector<NodeView>>();
      queue_views_ = std::make_shared<const QueueViews>();
      node_views_dirty_ = false;
      changed = true;
    }
    if (!changed) return;
    publish();
    return;
  }
  // Nodes and queue figures follow the cluster state.
  const state::ClusterState& st = sched_->state();
  const tenancy::Ledger& ledger = sched_->ledger();
  const tenancy::QueueTree& tree = ledger.tree();
  const bool state_changed = st.version() != views_state_version_;
  if (state_changed || node_views_dirty_ || !node_views_) {
    auto nodes = std::make_shared<std::vector<NodeView>>(cluster_->num_nodes());
    for (int32_t i = 0; i < cluster_->num_nodes(); ++i) {
      const NodeId n(i);
      NodeView& v = (*nodes)[i];
      v.gpus_used_milli = int64_t{cluster_->node(n).gpu_count} * kMilliPerGpu - st.node_free_milli(n);
      v.tasks = static_cast<int64_t>(st.tasks_on(n).size());
      v.up = nodes_[i].up;
      v.quarantined = nodes_[i].quarantined;
      v.spare = nodes_[i].spare;
      v.draining = nodes_[i].draining;
      v.drain_deadline = nodes_[i].drain_deadline;
      v.failed_gpus = nodes_[i].failed_gpus;
      v.failures = nodes_[i].total_failures;
    }
    node_views_ = std::move(nodes);
    node_views_dirty_ = false;
    changed = true;
  }
  const TimeUs now = clock_.Now();
  if (state_changed || !queue_views_ || static_cast<int32_t>(queue_views_->names.size()) != tree.size() ||
      now - queue_views_at_ >= kUsPerSecond) {  // decayed figures move with time
    auto q = std::make_shared<QueueViews>(BuildQueueViews(ledger, *cluster_, now));
    queue_views_ = std::move(q);
    queue_views_at_ = now;
    changed = true;
  }
  views_state_version_ = st.version();
  if (!changed) return;
  publish();
}

}  // namespace berth::server
