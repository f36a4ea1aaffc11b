// Workflows in the service: a POST with `stages` makes a workflow (durable: a
// kWorkflowAccepted record) whose stages are submitted as ordinary jobs when
// the workflow core (workload/workflow.h) says they are ready; GET shows the
// stages, DELETE cancels them all (a kJobFinished record under the
// workflow's id). Everything but SubmitWorkflow's parsing runs on the
// scheduling thread; recovery is in service_workflow_recovery.cc.
#include <algorithm>
#include <cstdio>
#include <future>

#include "berth/server/records.h"
#include "berth/server/service.h"
#include "berth/server/workflow_json.h"

namespace berth::server {

using job::JobState;
using nlohmann::json;

namespace {

std::string Fingerprint(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

ApiResult Service::SubmitWorkflow(const json& doc) {
  StatusOr<WorkflowSubmission> sub = ParseWorkflowJson(doc);
  if (!sub.ok()) return ApiResult::Error(400, sub.status().message());
  workload::WorkflowRun probe(sub->spec);
  for (int32_t s = 0; s < probe.num_stages(); ++s) {
    const job::JobSpec j = probe.StageJob(s);
    const std::string at = "stages[" + std::to_string(s) + "] ('" + sub->spec.stages[s].name + "'): ";
    if (Status within = CheckAdmissionLimits(j, "", options_.limits); !within.ok())
      return ApiResult::Error(422, at + within.message());
    // With node agents a stage no node can hold yet waits for one.
    if (Status feasible = options_.agent_nodes ? Status::Ok() : CheckFeasible(*cluster_, j); !feasible.ok())
      return ApiResult::Error(422, at + "the stage can never run here: " + feasible.message());
    if (options_.queues && !options_.queues->auto_leaves() && options_.queues->LeafFor(j) < 0)
      return ApiResult::Error(422, at + "tenant '" + j.tenant + "' maps to no leaf queue");
  }
  if (!ready_) return NotReady();
  const std::string key =
      sub->idempotency_key.empty() ? "workflow:" + sub->spec.name : "workflow-key:" + sub->idempotency_key;
  const std::string fingerprint = Fingerprint(WorkflowToJson(sub->spec).dump());
  auto spec = std::make_shared<workload::WorkflowSpec>(std::move(sub->spec));
  struct Admission {
    ApiResult result;
    std::shared_future<Status> accepted;  // valid: wait for it before answering
  };
  std::optional<Admission> adm = Call<Admission>([this, key, fingerprint, spec]() -> Admission {
    if (!ready_) return {NotReady(), {}};
    if (auto it = workflow_by_key_.find(key); it != workflow_by_key_.end()) {
      const WorkflowEntry& w = workflows_.at(it->second);
      if (w.fingerprint != fingerprint)
        return {ApiResult{409, {{"error", "workflow key '" + key + "' is already used by workflow " +
                                              std::to_string(w.id) + " with a different spec"},
                                {"id", w.id}}},
                {}};
      return {ApiResult{200, {{"id", w.id}, {"duplicate", true}}}, w.accepted};
    }
    const int64_t id = next_id_++;
    WorkflowEntry w{.id = id, .key = key, .fingerprint = fingerprint, .run = workload::WorkflowRun(*spec)};
    w.jobs.resize(spec->stages.size());
    w.accepted_at = clock_.Now();
    auto promise = std::make_shared<std::promise<Status>>();
    w.accepted = promise->get_future().share();
    const std::shared_future<Status> accepted = w.accepted;
    store::Record rec{store::RecordKind::kWorkflowAccepted, id, w.accepted_at, key,
                      EncodeWorkflowAccepted(*spec, fingerprint)};
    workflows_.emplace(id, std::move(w));
    workflow_by_key_.emplace(key, id);
    // Its stages are submitted once the workflow is durable (OnWorkflowAccepted),
    // so no stage job is ever stored without its workflow; the answer waits too.
    AppendRecord(std::move(rec), [this, promise, id](const Status& st) {
      if (!Post([this, promise, id, st] {
            OnWorkflowAccepted(id, st);
            AfterPublish([promise, st] { promise->set_value(st); });
          }))
        promise->set_value(Unavailable("the service is stopping"));
    });
    return {ApiResult{201, {{"id", id}, {"duplicate", false}, {"stages", spec->stages.size()}}}, accepted};
  });
  if (!adm) return ApiResult::Error(503, "the scheduling loop did not answer in time");
  if (adm->accepted.valid()) {
    if (adm->accepted.wait_for(std::chrono::microseconds(options_.request_timeout)) != std::future_status::ready)
      return ApiResult::Error(503, "the store did not make the workflow durable in time; retry with the same key");
    const Status st = adm->accepted.get();
    if (!st.ok()) return ApiResult::Error(503, "not stored: " + st.message() + "; retry with the same key");
  }
  return adm->result;
}

void Service::OnWorkflowAccepted(int64_t id, const Status& s) {
  auto it = workflows_.find(id);
  if (it == workflows_.end()) return;
  WorkflowEntry& w = it->second;
  if (!s.ok()) {  // not stored: as if never accepted (the client was told 503)
    if (auto k = workflow_by_key_.find(w.key); k != workflow_by_key_.end() && k->second == id)
      workflow_by_key_.erase(k);
    workflows_.erase(it);
    return;
  }
  w.durable = true;
  log_.Info("workflow_accepted", {{"workflow", id}, {"name", w.run.spec().name}, {"stages", w.run.num_stages()}});
  SubmitReadyStages(w);
  PublishWorkflowView(w);
}

void Service::SubmitStage(WorkflowEntry& w, int32_t s) {
  const job::JobSpec spec = w.run.StageJob(s);
  const std::string key = "workflow:" + std::to_string(w.id) + "/" + w.run.spec().stages[s].name + "#" +
                          std::to_string(w.run.attempts(s));
  const int64_t jid = AcceptOnLoop(key, SpecFingerprint(spec), spec);
  w.jobs[s].push_back(jid);
  stage_of_job_[jid] = {w.id, s};
  if (spec.service) deploying_stages_.insert(jid);
  log_.Info("stage_submitted", {{"workflow", w.id}, {"stage", w.run.spec().stages[s].name}, {"job", jid},
                                {"attempt", w.run.attempts(s)}});
}

void Service::SubmitReadyStages(WorkflowEntry& w) {
  if (!w.durable) return;  // OnWorkflowAccepted submits them
  for (int32_t s : w.run.TakeReady()) SubmitStage(w, s);
}

void Service::UpdateWorkflowEnd(WorkflowEntry& w) {
  if (!w.run.ended() || w.finished_at >= 0) return;
  w.finished_at = clock_.Now();
  if (w.key.rfind("workflow:", 0) == 0) workflow_by_key_.erase(w.key);  // a name-made key is freed at once
  log_.Info("workflow_ended", {{"workflow", w.id}, {"state", workload::WorkflowStateName(w.run.state())}});
}

bool Service::ServiceDeployed(const JobEntry& e) const {
  if (!e.spec.service || e.state != JobState::kRunning) return false;
  const std::optional<workload::ServiceStatus> st = services_->Find(JobId(e.id));
  return st && st->running >= std::max(1, e.spec.service->min_replicas);
}

void Service::CancelStageJob(JobEntry& e, int64_t workflow) {
  if (e.spec.service) (void)services_->Remove(JobId(e.id));  // its replicas stop at the controller's next turn
  deploying_stages_.erase(e.id);
  (void)CancelEntryOnLoop(e, "workflow " + std::to_string(workflow) + " cancelled");
}

void Service::ProcessWorkflowEvents() {
  std::vector<int64_t> touched;
  // Service stages succeed once deployed; the service runs on.
  for (auto it = deploying_stages_.begin(); it != deploying_stages_.end();) {
    const int64_t jid = *it;
    auto jit = jobs_.find(jid);
    auto st = stage_of_job_.find(jid);
    if (jit == jobs_.end() || st == stage_of_job_.end() || job::IsTerminal(jit->second.state)) {
      it = deploying_stages_.erase(it);  // ended (or never stored): handled as any stage job
      continue;
    }
    if (!ServiceDeployed(jit->second)) {
      ++it;
      continue;
    }
    it = deploying_stages_.erase(it);
    WorkflowEntry& w = workflows_.at(st->second.first);
    const int32_t s = st->second.second;
    if (w.jobs[s].empty() || w.jobs[s].back() != jid || w.run.state(s) != workload::StageState::kSubmitted) continue;
    (void)w.run.StageEnded(s, true);
    log_.Info("stage_deployed", {{"workflow", w.id}, {"stage", w.run.spec().stages[s].name}, {"job", jid}});
    SubmitReadyStages(w);
    UpdateWorkflowEnd(w);
    touched.push_back(w.id);
  }
  std::vector<int64_t> changed;
  changed.swap(stage_jobs_changed_);
  for (int64_t jid : changed) {
    auto st = stage_of_job_.find(jid);
    if (st == stage_of_job_.end()) continue;
    auto wit = workflows_.find(st->second.first);
    if (wit == workflows_.end()) continue;
    WorkflowEntry& w = wit->second;
    touched.push_back(w.id);
    const int32_t s = st->second.second;
    auto jit = jobs_.find(jid);
    if (w.jobs[s].empty() || w.jobs[s].back() != jid || w.run.state(s) != workload::StageState::kSubmitted)
      continue;  // an earlier attempt, or already accounted for
    if (jit == jobs_.end()) {  // its acceptance was never stored: the stage failed
      w.run.StageEnded(s, false);
    } else if (!job::IsTerminal(jit->second.state)) {
      continue;
    } else if (jit->second.state == JobState::kCancelled) {
      w.run.StageCancelled(s);
    } else if (w.run.StageEnded(s, jit->second.state == JobState::kSucceeded) ==
               workload::WorkflowRun::After::kRetry) {
      SubmitStage(w, s);
    }
    SubmitReadyStages(w);
    UpdateWorkflowEnd(w);
  }
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (int64_t id : touched) PublishWorkflowView(workflows_.at(id));
}

std::optional<std::pair<ApiResult, std::shared_future<Status>>> Service::CancelWorkflowOnLoop(int64_t id) {
  auto it = workflows_.find(id);
  if (it == workflows_.end()) return std::nullopt;
  WorkflowEntry& w = it->second;
  const workload::WorkflowState was = w.run.state();
  if (was == workload::WorkflowState::kCancelled)
    return std::pair{ApiResult{200, {{"id", id}, {"state", "cancelled"}}}, std::shared_future<Status>()};
  if (was != workload::WorkflowState::kRunning)
    return std::pair{
        ApiResult::Error(409, "workflow " + std::to_string(id) + " already " + workload::WorkflowStateName(was)),
        std::shared_future<Status>()};
  for (int32_t s : w.run.Cancel()) {
    if (w.jobs[s].empty()) continue;
    auto jit = jobs_.find(w.jobs[s].back());
    if (jit == jobs_.end() || job::IsTerminal(jit->second.state) || !jit->second.durable) continue;  // OnAccepted cancels it
    CancelStageJob(jit->second, id);
  }
  w.finished_at = clock_.Now();
  if (w.key.rfind("workflow:", 0) == 0) workflow_by_key_.erase(w.key);
  log_.Info("workflow_cancelled", {{"workflow", id}});
  PublishWorkflowView(w);
  // The cancellation is durable as a kJobFinished record under the
  // workflow's id, after those of its stage jobs.
  auto promise = std::make_shared<std::promise<Status>>();
  std::shared_future<Status> durable = promise->get_future().share();
  AppendRecord({store::RecordKind::kJobFinished, id, w.finished_at, "", EncodeEnd(JobState::kCancelled, "cancelled by request")},
               [promise](const Status& st) { promise->set_value(st); });
  return std::pair{ApiResult{200, {{"id", id}, {"state", "cancelled"}}}, std::move(durable)};
}

void Service::PublishWorkflowView(const WorkflowEntry& w) {
  const workload::WorkflowSpec& spec = w.run.spec();
  json stages = json::array();
  for (int32_t s = 0; s < w.run.num_stages(); ++s) {
    const workload::StageSpec& st = spec.stages[s];
    std::string state = workload::StageStateName(w.run.state(s));
    if (w.run.state(s) == workload::StageState::kSubmitted && !w.jobs[s].empty())
      if (auto jit = jobs_.find(w.jobs[s].back()); jit != jobs_.end()) state = job::JobStateName(jit->second.state);
    json o = {{"name", st.name},
              {"state", state},
              {"attempts", w.run.attempts(s)},
              {"jobs", w.jobs[s]},
              {"depends_on", st.depends_on},
              {"after", workload::StageConditionName(st.after)},
              {"retries", st.retries}};
    if (!w.jobs[s].empty()) o["job"] = w.jobs[s].back();
    if (!st.artifact.empty()) o["artifact"] = st.artifact;
    stages.push_back(std::move(o));
  }
  auto view = std::make_shared<const json>(json{{"id", w.id},
                                                {"kind", "workflow"},
                                                {"name", spec.name},
                                                {"tenant", spec.tenant},
                                                {"state", workload::WorkflowStateName(w.run.state())},
                                                {"accepted_at_s", UsToSeconds(w.accepted_at)},
                                                {"finished_at_s", w.finished_at < 0 ? json() : json(UsToSeconds(w.finished_at))},
                                                {"stages", std::move(stages)},
                                                {"spec", WorkflowToJson(spec)}});
  std::lock_guard<std::mutex> lock(workflow_views_mu_);
  workflow_views_[w.id] = std::move(view);
}

std::optional<json> Service::WorkflowView(int64_t id) const {
  std::lock_guard<std::mutex> lock(workflow_views_mu_);
  auto it = workflow_views_.find(id);
  if (it == workflow_views_.end()) return std::nullopt;
  return *it->second;
}

}  // namespace berth::server
