// Rebuilding the service's state from the store's records.
#include <chrono>

#include "berth/server/records.h"
#include "berth/server/service.h"

namespace berth::server {

using job::JobState;
using nlohmann::json;

Status Service::Recover() {
  const auto t0 = std::chrono::steady_clock::now();
  BERTH_ASSIGN_OR_RETURN(store::Loaded loaded, store_.Load());
  int64_t skipped = 0;
  std::optional<ClusterInfo> recorded;  // the cluster of the last kClusterInfo record
  failure_history_.clear();  // the store holds every failure learned so far
  // Fold the log into the last state of every job and node.
  for (const store::Record& r : loaded.records) {
    switch (r.kind) {
      case store::RecordKind::kJobAccepted: {
        if (jobs_.count(r.job)) {
          ++skipped;  // never written twice by one writer; ignore a repeat
          continue;
        }
        // A key comes back only once the job holding it ended (and its key
        // was freed): then the newer job takes it.
        if (auto k = by_key_.find(r.key); k != by_key_.end()) {
          if (!job::IsTerminal(jobs_.at(k->second).state)) {
            ++skipped;
            continue;
          }
          by_key_.erase(k);
        }
        JobEntry e;
        e.id = r.job;
        e.key = r.key;
        e.accepted_at = r.time;
        Status s = DecodeAccepted(r.body, e.spec, e.fingerprint);
        if (!s.ok()) return Internal("store record " + std::to_string(r.revision) + ": " + s.message());
        e.spec.id = JobId(e.id);
        e.durable = true;
        std::promise<Status> p;
        p.set_value(Status::Ok());
        e.accepted = p.get_future().share();
        next_id_ = std::max(next_id_, e.id + 1);
        by_key_.emplace(e.key, e.id);
        jobs_.emplace(e.id, std::move(e));
        break;
      }
      case store::RecordKind::kJobStarted: {
        auto it = jobs_.find(r.job);
        if (it == jobs_.end()) {
          ++skipped;
          continue;
        }
        auto placements = DecodePlacements(*cluster_, JobId(r.job), r.body);
        JobEntry& e = it->second;
        ++e.generation;
        if (!placements.ok()) {
          log_.Warn("recovery_placement_lost", {{"job", r.job}, {"error", placements.status().message()}});
          e.state = JobState::kPending;
          e.placements.clear();
          continue;
        }
        e.state = JobState::kRunning;
        e.started_at = r.time;
        e.placements = std::move(placements).value();
        e.task_attempts.clear();
        e.rank_order = workload::RankOrder(e.placements);
        break;
      }
      case store::RecordKind::kTaskRepaired: {
        auto it = jobs_.find(r.job);
        if (it == jobs_.end()) {
          ++skipped;
          continue;
        }
        JobEntry& e = it->second;
        auto repair = DecodeRepair(*cluster_, JobId(r.job), r.body);
        if (!repair.ok()) {
          log_.Warn("recovery_repair_lost", {{"job", r.job}, {"error", repair.status().message()}});
          e.state = JobState::kPending;  // its node is gone: the gang goes back to the queue
          e.placements.clear();
          continue;
        }
        if (e.state != JobState::kRunning || e.generation != repair->generation) {
          ++skipped;
          continue;
        }
        for (auto& p : e.placements)
          if (p.task.index == repair->placement.task.index) p = repair->placement;
        e.task_attempts[repair->placement.task.index] = repair->attempt;
        ++e.repairs;
        break;
      }
      case store::RecordKind::kWorkflowAccepted:
        BERTH_RETURN_IF_ERROR(RecoverWorkflowRecord(r));
        break;
      case store::RecordKind::kJobRequeued:
      case store::RecordKind::kJobFinished: {
        auto it = jobs_.find(r.job);
        if (it == jobs_.end()) {
          if (auto w = workflows_.find(r.job); w != workflows_.end() && r.kind == store::RecordKind::kJobFinished) {
            w->second.cancel_recorded = true;  // a workflow's end is recorded only when it is cancelled
            w->second.finished_at = r.time;
            continue;
          }
          ++skipped;
          continue;
        }
        JobEntry& e = it->second;
        JobState st;
        std::string reason;
        Status s = DecodeEnd(r.body, st, reason);
        if (!s.ok()) return Internal("store record " + std::to_string(r.revision) + ": " + s.message());
        e.placements.clear();
        if (r.kind == store::RecordKind::kJobRequeued) {
          e.state = JobState::kPending;
          ++e.requeues;
        } else {
          e.state = st;
          e.finished_at = r.time;
          e.end_reason = reason;
        }
        break;
      }
      case store::RecordKind::kJobAssigned:
        return FailedPrecondition("the store at record " + std::to_string(r.revision) +
                                  " was written by a federation dispatcher (berth serve --federation); "
                                  "give this service a store of its own");
      case store::RecordKind::kClusterInfo: {
        ClusterInfo info;
        Status s = DecodeClusterInfo(r.body, info);
        if (!s.ok()) return Internal("store record " + std::to_string(r.revision) + ": " + s.message());
        recorded = std::move(info);
        break;
      }
      case store::RecordKind::kNodeRegistered:
        break;  // read before the fold (LoadAgents)
      case store::RecordKind::kNodeFailed: {
        auto weight = DecodeNodeFailure(r.body);
        if (!weight.ok()) return Internal("store record " + std::to_string(r.revision) + ": " + weight.status().message());
        failure_history_.emplace_back(r.key, r.time, *weight);
        if (failure_history_.size() > kMaxFailureHistory) failure_history_.pop_front();
        break;
      }
      case store::RecordKind::kNodeState: {
        auto n = cluster_->FindNode(r.key);
        if (!n) continue;
        if (auto rec = DecodeNode(r.body); rec.ok()) {
          NodeEntry& ne = nodes_[n->value()];
          ne.quarantined = rec->quarantined;
          ne.total_failures = rec->failures;
          ne.draining = rec->draining;
          ne.drain_deadline = rec->draining ? rec->drain_deadline : -1;
        }
        break;
      }
    }
  }
  // The cluster the store was written for must be this one, unless told.
  const ClusterInfo here = DescribeCluster(*cluster_);
  // With agents the cluster is what registered: it changes by design.
  const bool cluster_changed = !options_.agent_nodes && recorded && recorded->fingerprint != here.fingerprint;
  if (cluster_changed) {
    if (!options_.accept_cluster_change)
      return FailedPrecondition("the store " + store_.Describe() + " was written for another cluster (" +
                                recorded->summary + "; fingerprint " + recorded->fingerprint + ") than this one (" +
                                here.summary + "; fingerprint " + here.fingerprint +
                                "); start with the recorded cluster, or pass --accept-cluster-change to run on this "
                                "one (jobs that no longer fit stay pending and are reported)");
    log_.Warn("cluster_changed", {{"recorded", recorded->summary}, {"recorded_fingerprint", recorded->fingerprint},
                                  {"now", here.summary}, {"fingerprint", here.fingerprint}});
  }
  // The failure history feeds the policy's failure-aware plugins
  // (topology-reliable) as it did before the restart.
  if (sched_) ReplayFailureHistory(*sched_, *cluster_);
  metrics_.failure_history.store(static_cast<int64_t>(failure_history_.size()));
  // Quarantined nodes stay down; the others start with a fresh heartbeat.
  const TimeUs now = clock_.Now();
  const TimeUs steady_now =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  for (int32_t n = 0; n < cluster_->num_nodes(); ++n) {
    beat_at_[n].store(steady_now, std::memory_order_relaxed);
    // With heartbeats a quarantined node counts as down until it beats again;
    // without, it is healthy and takes work once returned to service.
    if (nodes_[n].quarantined && (options_.virtual_nodes || options_.agent_nodes)) nodes_[n].up = false;
    if (!nodes_[n].schedulable()) BERTH_RETURN_IF_ERROR(sched_->SetNodeUp(NodeId(n), false));
  }
  // Re-submit unfinished jobs in id order; re-apply running placements.
  int64_t pending = 0, running = 0, finished = 0, lost = 0;
  json unfit_ids = json::array();
  int64_t unfit = 0;
  for (auto& [id, e] : jobs_) {
    if (job::IsTerminal(e.state)) {
      ++finished;
      ReleaseKey(e);
      continue;
    }
    // A job the cluster can no longer hold (it changed) waits outside the
    // scheduler, which would fail it; a later start on a cluster that fits
    // it schedules it again.
    if (Status fits = Feasible(e.spec); !fits.ok()) {
      e.unfit = options_.agent_nodes ? "waiting for node agents that can hold it: " + fits.message()
                                     : "does not fit this cluster (changed since the job was accepted): " + fits.message();
      if (e.state == JobState::kRunning) {
        e.placements.clear();
        ++e.requeues;
        AppendRecord({store::RecordKind::kJobRequeued, id, now, "", EncodeEnd(JobState::kPending, e.unfit)});
      }
      e.state = JobState::kPending;
      if (unfit_ids.size() < 100) unfit_ids.push_back(id);
      ++unfit;
      continue;
    }
    if (e.spec.service) {  // the controller starts its replicas again
      ServiceAccepted(e);
      ++running;
      continue;
    }
    Status s = sched_->Submit(e.spec);
    if (!s.ok()) {
      e.state = JobState::kFailed;
      e.end_reason = "not valid after restart: " + s.message();
      e.finished_at = now;
      ReleaseKey(e);
      AppendRecord({store::RecordKind::kJobFinished, id, now, "", EncodeEnd(e.state, e.end_reason)});
      continue;
    }
    if (e.state == JobState::kRunning) {
      s = sched_->Adopt(JobId(id), e.placements, e.started_at);
      if (s.ok()) {
        e.launched = true;  // its start record is durable: agents keep running it
        running_.insert(id);
        ++running;
        continue;
      }
      log_.Warn("recovery_requeue", {{"job", id}, {"error", s.message()}});
      e.state = JobState::kPending;
      e.placements.clear();
      ++e.requeues;
      ++lost;
      AppendRecord({store::RecordKind::kJobRequeued, id, now, "", EncodeEnd(JobState::kPending, s.message())});
    }
    pending_.insert(id);
    ++pending;
  }
  if (!options_.agent_nodes && (!recorded || cluster_changed))
    AppendRecord({store::RecordKind::kClusterInfo, -1, now, "cluster", EncodeClusterInfo(here)});
  if (unfit > 0)
    log_.Warn("jobs_no_longer_fit", {{"count", unfit}, {"jobs", unfit_ids}, {"cluster", here.summary},
                                     {"hint", "they stay pending (GET /v1/jobs/ID shows \"unfit\"); start on a "
                                              "cluster that holds them, or cancel them"}});
  dirty_ = true;
  log_.Info("recovered", {{"records", loaded.records.size()}, {"revision", loaded.revision},
                          {"jobs", jobs_.size()}, {"pending", pending}, {"running", running},
                          {"finished", finished}, {"requeued", lost}, {"unfit", unfit}, {"skipped_records", skipped},
                          {"failure_history", failure_history_.size()},
                          {"term", fence_.term},
                          {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}});
  return Status::Ok();
}

}  // namespace berth::server
