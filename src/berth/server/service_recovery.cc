// Rebuilding the service's state from the store's records.
#include <chrono>

#include "berth/server/records.h"
#include "berth/server/service.h"

namespace berth::server {

using job::JobState;

Status Service::Recover() {
  const auto t0 = std::chrono::steady_clock::now();
  BERTH_ASSIGN_OR_RETURN(store::Loaded loaded, store_.Load());
  int64_t skipped = 0;
  // Fold the log into the last state of every job and node.
  for (const store::Record& r : loaded.records) {
    switch (r.kind) {
      case store::RecordKind::kJobAccepted: {
        if (jobs_.count(r.job) || by_key_.count(r.key)) {
          ++skipped;  // never written twice by one writer; ignore a repeat
          continue;
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
        auto placements = DecodePlacements(cluster_, JobId(r.job), r.body);
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
        break;
      }
      case store::RecordKind::kJobRequeued:
      case store::RecordKind::kJobFinished: {
        auto it = jobs_.find(r.job);
        if (it == jobs_.end()) {
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
      case store::RecordKind::kNodeState: {
        auto n = cluster_.FindNode(r.key);
        if (!n) continue;
        bool quarantined = false;
        int64_t failures = 0;
        if (DecodeNode(r.body, quarantined, failures).ok()) {
          nodes_[n->value()].quarantined = quarantined;
          nodes_[n->value()].total_failures = failures;
        }
        break;
      }
    }
  }
  // Quarantined nodes stay down; the others start with a fresh heartbeat.
  const TimeUs now = clock_.Now();
  const TimeUs steady_now =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  for (int32_t n = 0; n < cluster_.num_nodes(); ++n) {
    beat_at_[n].store(steady_now, std::memory_order_relaxed);
    if (nodes_[n].quarantined) {
      nodes_[n].up = false;
      BERTH_RETURN_IF_ERROR(sched_->SetNodeUp(NodeId(n), false));
    }
  }
  // Re-submit unfinished jobs in id order; re-apply running placements.
  int64_t pending = 0, running = 0, finished = 0, lost = 0;
  for (auto& [id, e] : jobs_) {
    if (job::IsTerminal(e.state)) {
      ++finished;
      continue;
    }
    Status s = sched_->Submit(e.spec);
    if (!s.ok()) {
      e.state = JobState::kFailed;
      e.end_reason = "not valid after restart: " + s.message();
      AppendRecord({store::RecordKind::kJobFinished, id, now, "", EncodeEnd(e.state, e.end_reason)});
      continue;
    }
    if (e.state == JobState::kRunning) {
      s = sched_->Adopt(JobId(id), e.placements, e.started_at);
      if (s.ok()) {
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
  dirty_ = true;
  log_.Info("recovered", {{"records", loaded.records.size()}, {"revision", loaded.revision},
                          {"jobs", jobs_.size()}, {"pending", pending}, {"running", running},
                          {"finished", finished}, {"requeued", lost}, {"skipped_records", skipped},
                          {"term", fence_.term},
                          {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}});
  return Status::Ok();
}

}  // namespace berth::server
