// Workflows after a restart. The store holds a workflow's acceptance
// (kWorkflowAccepted: its spec) and, when it was cancelled, a kJobFinished
// record under its id; everything else follows from its stage jobs, which are
// ordinary stored jobs whose idempotency key names the workflow, the stage and
// the attempt ("workflow:5/train#2"). RecoverWorkflows replays the workflow
// core over those jobs in the order the stages ran:
//
//   prepare#1 succeeded, train#1 failed, train#2 running    (stored jobs)
//   -> prepare succeeded; train retried once, its attempt 2 adopted (the
//      job runs on as recovered); evaluate waits for it.
//
// A stage whose current attempt has no stored job (the crash came between a
// stage's end and the next submission) is submitted now; a workflow cancelled
// before the crash is cancelled again (its stage jobs that were not yet
// recorded as cancelled are cancelled now).
#include <charconv>

#include "berth/server/records.h"
#include "berth/server/service.h"
#include "berth/server/workflow_json.h"

namespace berth::server {

using job::JobState;

namespace {

struct StageKey {
  int64_t workflow = -1;
  std::string stage;
  int32_t attempt = 0;
};

// "workflow:ID/STAGE#ATTEMPT" (SubmitStage's key), or nothing.
std::optional<StageKey> ParseStageKey(const std::string& key) {
  constexpr std::string_view kPrefix = "workflow:";
  if (key.rfind(kPrefix, 0) != 0) return std::nullopt;
  const size_t slash = key.find('/', kPrefix.size());
  const size_t hash = key.rfind('#');
  if (slash == std::string::npos || hash == std::string::npos || hash <= slash + 1) return std::nullopt;
  StageKey k;
  const char* b = key.data();
  auto r1 = std::from_chars(b + kPrefix.size(), b + slash, k.workflow);
  auto r2 = std::from_chars(b + hash + 1, b + key.size(), k.attempt);
  if (r1.ec != std::errc() || r1.ptr != b + slash || r2.ec != std::errc() || r2.ptr != b + key.size() ||
      k.attempt < 1)
    return std::nullopt;
  k.stage = key.substr(slash + 1, hash - slash - 1);
  return k;
}

}  // namespace

Status Service::RecoverWorkflowRecord(const store::Record& r) {
  if (workflows_.count(r.job) || jobs_.count(r.job)) return Status::Ok();  // a repeat: the first one holds
  StatusOr<StoredWorkflow> w = DecodeWorkflowAccepted(r.body);
  if (!w.ok()) return Internal("store record " + std::to_string(r.revision) + ": " + w.status().message());
  WorkflowEntry e{.id = r.job, .key = r.key, .fingerprint = w->fingerprint, .run = workload::WorkflowRun(w->spec)};
  e.jobs.resize(w->spec.stages.size());
  e.accepted_at = r.time;
  e.durable = true;
  std::promise<Status> p;
  p.set_value(Status::Ok());
  e.accepted = p.get_future().share();
  next_id_ = std::max(next_id_, r.job + 1);
  workflows_.emplace(r.job, std::move(e));
  return Status::Ok();
}

void Service::RecoverWorkflows() {
  if (workflows_.empty()) return;
  // The stored job of each (workflow, stage, attempt).
  std::map<int64_t, std::map<std::string, std::map<int32_t, int64_t>>> found;
  for (const auto& [jid, e] : jobs_) {
    std::optional<StageKey> k = ParseStageKey(e.key);
    if (!k) continue;
    auto w = workflows_.find(k->workflow);
    if (w == workflows_.end() || e.spec.name != w->second.run.spec().name + "/" + k->stage) continue;
    found[k->workflow][k->stage].emplace(k->attempt, jid);  // the first job of an attempt holds
  }
  int64_t running = 0, ended = 0, resubmitted = 0, cancelled_jobs = 0;
  for (auto& [wid, w] : workflows_) {
    auto& of_stage = found[wid];
    const auto job_of = [&](int32_t s, int32_t attempt) -> const JobEntry* {
      auto st = of_stage.find(w.run.spec().stages[s].name);
      if (st == of_stage.end()) return nullptr;
      auto a = st->second.find(attempt);
      return a == st->second.end() ? nullptr : &jobs_.at(a->second);
    };
    // Replay: stages become ready as their dependencies' jobs ended.
    for (bool moved = true; moved;) {
      moved = !w.run.TakeReady().empty();
      for (int32_t s = 0; s < w.run.num_stages(); ++s) {
        if (w.run.state(s) != workload::StageState::kSubmitted) continue;
        const JobEntry* e = job_of(s, w.run.attempts(s));
        if (e && e->spec.service && !job::IsTerminal(e->state)) {
          // A service stage was deployed if a stage after it was submitted;
          // else it is watched until it is (ProcessWorkflowEvents).
          bool deployed = false;
          for (int32_t t = 0; t < w.run.num_stages() && !deployed; ++t)
            for (const auto& d : w.run.spec().stages[t].depends_on)
              if (d == w.run.spec().stages[s].name && job_of(t, 1)) deployed = true;
          if (!deployed) continue;
          (void)w.run.StageEnded(s, true);
          moved = true;
          continue;
        }
        if (!e || !job::IsTerminal(e->state)) continue;
        if (e->state == JobState::kCancelled) {
          if (w.cancel_recorded) continue;  // cancelled with its workflow: Cancel() below says so
          w.run.StageCancelled(s);
        } else {
          (void)w.run.StageEnded(s, e->state == JobState::kSucceeded);
        }
        moved = true;
      }
    }
    // The jobs of the attempts made so far.
    TimeUs last_end = w.accepted_at;
    for (int32_t s = 0; s < w.run.num_stages(); ++s) {
      w.jobs[s].clear();
      for (int32_t a = 1; a <= w.run.attempts(s); ++a)
        if (const JobEntry* e = job_of(s, a)) {
          w.jobs[s].push_back(e->id);
          stage_of_job_[e->id] = {wid, s};
          if (e->finished_at > last_end) last_end = e->finished_at;
        }
    }
    for (int32_t s = 0; s < w.run.num_stages(); ++s)
      if (w.run.state(s) == workload::StageState::kSubmitted)
        if (const JobEntry* e = job_of(s, w.run.attempts(s)); e && e->spec.service && !job::IsTerminal(e->state))
          deploying_stages_.insert(e->id);
    if (w.cancel_recorded) {
      for (int32_t s : w.run.Cancel()) {
        const JobEntry* e = job_of(s, w.run.attempts(s));
        if (!e || job::IsTerminal(e->state)) continue;
        CancelStageJob(jobs_.at(e->id), wid);
        ++cancelled_jobs;
      }
      w.finished_at = std::max(w.finished_at, last_end);
    } else if (w.run.ended()) {
      w.finished_at = last_end;
    } else {
      // Stages due whose attempt was never stored are submitted now.
      for (int32_t s = 0; s < w.run.num_stages(); ++s)
        if (w.run.state(s) == workload::StageState::kSubmitted && !job_of(s, w.run.attempts(s))) {
          SubmitStage(w, s);
          ++resubmitted;
        }
    }
    // Keys: a running workflow holds its key; an ended one holds a key the
    // client chose (as when it ended in this process).
    if (!w.run.ended() || w.key.rfind("workflow:", 0) != 0) workflow_by_key_[w.key] = wid;
    (w.run.ended() ? ended : running)++;
    PublishWorkflowView(w);
  }
  log_.Info("workflows_recovered", {{"workflows", workflows_.size()}, {"running", running}, {"ended", ended},
                                    {"stages_submitted", resubmitted}, {"stage_jobs_cancelled", cancelled_jobs}});
}

}  // namespace berth::server
